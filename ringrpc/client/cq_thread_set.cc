#include "ringrpc/client/cq_thread_set.h"

#include "absl/strings/str_cat.h"
#include "ringrpc/client/runtime/cq_threads.h"

namespace ringrpc {

std::shared_ptr<CqThreadSet> CqThreadSet::Create(const Options& options, Status* status) {
  auto fail = [&](Status s) -> std::shared_ptr<CqThreadSet> {
    if (status != nullptr) *status = std::move(s);
    return nullptr;
  };
  runtime::CqThreads::Options o{.threads = options.threads};
  if (options.poller == "io_uring") {
    o.backend = runtime::Backend::kIoUring;
  } else if (options.poller == "epoll") {
    o.backend = runtime::Backend::kEpoll;
  } else if (!options.poller.empty()) {
    return fail(Status(StatusCode::INVALID_ARGUMENT,
                       absl::StrCat("CqThreadSet: poller must be \"io_uring\", \"epoll\" or "
                                    "empty, got \"",
                                    options.poller, "\"")));
  }
  if (options.threads > 1024) {
    return fail(
        Status(StatusCode::INVALID_ARGUMENT,
               absl::StrCat("CqThreadSet: threads must be 0..1024, got ", options.threads)));
  }
  absl::StatusOr<std::unique_ptr<runtime::CqThreads>> threads = runtime::CqThreads::Start(o);
  if (!threads.ok()) return fail(Status::FromAbsl(threads.status()));
  if (status != nullptr) *status = Status();
  return std::shared_ptr<CqThreadSet>(
      new CqThreadSet(std::shared_ptr<runtime::CqThreads>(std::move(*threads))));
}

size_t CqThreadSet::size() const { return threads_->size(); }

}  // namespace ringrpc
