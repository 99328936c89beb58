// ringrpc/client/internal/interceptors.h — one call's interceptors (made by the
// channel's factories when the call opens) and the hook points ClientCall
// runs them at. Private to ringrpc/client/.
//
// Threading: every hook runs on the call's CQ thread. An interceptor may
// answer (Proceed or Fail) inside Intercept, or later from any thread: the
// hook is then awaited until it does, or until the call's deadline or
// TryCancel ends the wait (the call then ends with that status). A batch
// whose wait ended lives on, with the call's interceptors, until it is
// answered, so a late answer touches nothing that is gone.
#ifndef RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_
#define RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/transport/metadata.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace ringrpc::runtime {
class EventLoop;
}  // namespace ringrpc::runtime

namespace ringrpc::internal {

struct CancelState;

using InterceptorFactories =
    std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>>;

class CallInterceptors : public std::enable_shared_from_this<CallInterceptors> {
 public:
  // Where a hook waits for a late answer, and for how long.
  struct Waits {
    runtime::EventLoop* loop = nullptr;  // the call's CQ thread
    TimePoint deadline = TimePoint::max();
    std::shared_ptr<CancelState> cancel;
    // Keeps the loop alive while a late answer is posted to it.
    std::shared_ptr<void> keep;
  };

  // nullptr when there are no factories (or none made an interceptor).
  static std::shared_ptr<CallInterceptors> Create(const InterceptorFactories* factories,
                                                  const std::string& method, ClientContext* ctx,
                                                  Waits waits);

  // Each runs every interceptor at one hook point and gives the status an
  // interceptor failed the call with (OK if all proceeded): at once when
  // each answered inside Intercept (no frame, no suspension), else when
  // the last one answers. What the interceptors changed is written back.
  ReadyOr<Status> PreSendInitialMetadata(transport::Metadata& md);
  ReadyOr<Status> PreSendMessage(std::string& message);
  ReadyOr<Status> PreSendClose();
  // Once per call; later calls do nothing.
  ReadyOr<Status> PostRecvInitialMetadata(const transport::Metadata& md);
  ReadyOr<Status> PostRecvMessage(std::string& message);
  // Gives the call's status as the interceptors leave it.
  ReadyOr<Status> PostRecvStatus(Status status, const transport::Metadata& initial,
                                 const transport::Metadata& trailing);
  // Never waits: the call is cancelled whatever the interceptors say. Also
  // ends a hook's wait for a late answer (the call ends CANCELLED).
  void PreSendCancel();

  // The call has opened: TryCancel reaches it (and through PreSendCancel a
  // waiting hook) from now on, not through a wait's own registration.
  void Opened() { opened_ = true; }

  class Batch;

 private:
  class Hold;
  struct Wait;
  enum class Step { kProceeded, kFailed, kLater };
  // Runs interceptors from `*next` on until one fails, has not answered
  // yet (`*next` is then that one), or all proceeded.
  Step RunFrom(Batch& batch, size_t* next);
  // The whole hook: RunFrom, and when an answer is late, a task that
  // waits for it and runs the rest; `store` writes the batch's data back.
  template <typename Store>
  ReadyOr<Status> Run(std::shared_ptr<Batch> batch, Store store);
  template <typename Store>
  static Task<Status> Later(std::shared_ptr<CallInterceptors> self, Hold hold, size_t next,
                            Store store);
  std::shared_ptr<Batch> NewBatch(experimental::InterceptionHookPoints point);
  // Waits for interceptor `index`'s late answer: nullopt once answered,
  // else the status the wait ended with (the batch is then let go).
  Task<std::optional<Status>> AwaitAnswer(std::shared_ptr<Batch> batch, size_t index);
  // The method's request or response type, from the generated descriptor
  // pool; looked up when an interceptor first asks (nullptr: unknown).
  // Any thread (an interceptor may look at a message from its own).
  const google::protobuf::Message* Prototype(bool request);

  std::vector<std::unique_ptr<experimental::Interceptor>> list_;
  std::string method_;
  Waits waits_;
  // Loop thread only.
  bool initial_reported_ = false;
  bool opened_ = false;
  bool cancelled_ = false;      // PreSendCancel ran
  std::vector<Wait*> waiting_;  // the waits for late answers in progress
  std::once_flag types_once_;
  const google::protobuf::Message* request_type_ = nullptr;
  const google::protobuf::Message* response_type_ = nullptr;
};

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_
