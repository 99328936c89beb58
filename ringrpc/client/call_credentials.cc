#include "ringrpc/client/call_credentials.h"

#include <pthread.h>

#include <chrono>
#include <deque>
#include <functional>
#include <new>
#include <thread>
#include <utility>

#include "ringrpc/base/fork.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/internal/call_credentials.h"
#include "ringrpc/client/internal/cancel_wake.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc {
namespace {

class AccessToken final : public CallCredentials {
 public:
  explicit AccessToken(std::string token) : value_("Bearer " + std::move(token)) {}
  Status GetRequestMetadata(const CallInfo&,
                            std::multimap<std::string, std::string>* md) const override {
    md->emplace("authorization", value_);
    return Status();
  }
  bool blocking() const override { return false; }

 private:
  std::string value_;
};

class PluginCredentials final : public CallCredentials {
 public:
  explicit PluginCredentials(std::unique_ptr<MetadataCredentialsPlugin> p)
      : plugin_(std::move(p)), blocking_(plugin_->IsBlocking()) {}
  Status GetRequestMetadata(const CallInfo& call,
                            std::multimap<std::string, std::string>* md) const override {
    return plugin_->GetMetadata(call.service_url, call.method_name, AuthContext(call.secure), md);
  }
  bool blocking() const override { return blocking_; }

 private:
  std::unique_ptr<MetadataCredentialsPlugin> plugin_;
  const bool blocking_;
};

class Composite final : public CallCredentials {
 public:
  Composite(std::shared_ptr<CallCredentials> a, std::shared_ptr<CallCredentials> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  Status GetRequestMetadata(const CallInfo& call,
                            std::multimap<std::string, std::string>* md) const override {
    Status s = a_->GetRequestMetadata(call, md);
    return s.ok() ? b_->GetRequestMetadata(call, md) : s;
  }
  bool blocking() const override { return a_->blocking() || b_->blocking(); }

 private:
  std::shared_ptr<CallCredentials> a_, b_;
};

class CompositeChannel final : public ChannelCredentials {
 public:
  CompositeChannel(std::shared_ptr<ChannelCredentials> channel,
                   std::shared_ptr<CallCredentials> call)
      : channel_(std::move(channel)), call_(std::move(call)) {}
  bool secure() const override { return channel_->secure(); }
  const SslCredentialsOptions* ssl_options() const override { return channel_->ssl_options(); }
  std::optional<grpc_local_connect_type> local_connect_type() const override {
    return channel_->local_connect_type();
  }
  std::shared_ptr<CallCredentials> call_credentials() const override {
    std::shared_ptr<CallCredentials> inner = channel_->call_credentials();
    return inner ? CompositeCallCredentials(inner, call_) : call_;
  }

 private:
  std::shared_ptr<ChannelCredentials> channel_;
  std::shared_ptr<CallCredentials> call_;
};

// Threads for credentials that may block: one per job in flight, kept 30 s
// after their last job, so a slow plugin holds up only its own calls. Named
// "ringrpc-creds". Never destroyed (a job may finish while the process
// exits). fork(): the lock is held across it; a child has none of these
// threads, and the jobs queued at the fork are the parent's calls' (left
// untouched, never run there).
class CredentialsThreads {
 public:
  static CredentialsThreads& Get() {
    static CredentialsThreads* threads = [] {
      auto* t = new CredentialsThreads;
      pthread_atfork(&Prepare, &Parent, &Child);
      return t;
    }();
    return *threads;
  }
  void Run(std::function<void()> job) {
    MutexLock lock(&mu_);
    jobs_.push_back(std::move(job));
    if (idle_ > 0) {
      cv_.Signal();
      return;
    }
    std::thread([this] {
      pthread_setname_np(pthread_self(), "ringrpc-creds");
      Work();
    }).detach();
  }

 private:
  static void Prepare() ABSL_NO_THREAD_SAFETY_ANALYSIS { Get().mu_.Lock(); }
  static void Parent() ABSL_NO_THREAD_SAFETY_ANALYSIS { Get().mu_.Unlock(); }
  static void Child() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    CredentialsThreads& t = Get();
    t.idle_ = 0;  // the parent's threads are not here
    AbandonForever(std::make_unique<std::deque<std::function<void()>>>(std::move(t.jobs_)));
    t.jobs_.clear();
    // The copied condition variable still counts the parent's waiters (a
    // Signal here would wait for them forever): a fresh one, made over it
    // (destroying it would wait for them too).
    new (&t.cv_) CondVar();
    t.mu_.Unlock();
  }

  void Work() {
    for (;;) {
      std::function<void()> job;
      {
        MutexLock lock(&mu_);
        ++idle_;
        const bool got =
            cv_.WaitUntil(&mu_, std::chrono::steady_clock::now() + std::chrono::seconds(30),
                          [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !jobs_.empty(); });
        --idle_;
        if (!got) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();  // what it captured is released here too, off the lock
    }
  }
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
};

Status RunAll(const std::vector<std::shared_ptr<CallCredentials>>& creds,
              const CallCredentials::CallInfo& info, std::multimap<std::string, std::string>* md) {
  for (const auto& c : creds) {
    Status s = c->GetRequestMetadata(info, md);
    if (!s.ok()) {
      return Status(s.error_code(), "call credentials failed: " + s.error_message());
    }
  }
  return Status();
}

// A credentials job's result, waited for on the call's CQ thread.
struct OffLoopWait final : TimerCallback {
  explicit OffLoopWait(runtime::EventLoop& l) : loop(l), event(l) {}
  ~OffLoopWait() {
    if (timer != 0) loop.CancelTimer(timer);
  }
  void OnTimer() override {
    timer = 0;
    event.Set();
  }
  runtime::EventLoop& loop;
  runtime::LoopEvent event;
  uint64_t timer = 0;
  bool done = false;
  Status status;
  std::multimap<std::string, std::string> md;
};

}  // namespace

std::shared_ptr<CallCredentials> AccessTokenCredentials(const std::string& access_token) {
  return std::make_shared<AccessToken>(access_token);
}

std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
    std::unique_ptr<MetadataCredentialsPlugin> plugin) {
  if (plugin == nullptr) return nullptr;
  return std::make_shared<PluginCredentials>(std::move(plugin));
}

std::shared_ptr<CallCredentials> CompositeCallCredentials(
    const std::shared_ptr<CallCredentials>& first, const std::shared_ptr<CallCredentials>& second) {
  if (first == nullptr) return second;
  if (second == nullptr) return first;
  return std::make_shared<Composite>(first, second);
}

std::shared_ptr<ChannelCredentials> CompositeChannelCredentials(
    const std::shared_ptr<ChannelCredentials>& channel_creds,
    const std::shared_ptr<CallCredentials>& call_creds) {
  if (channel_creds == nullptr) return nullptr;
  if (call_creds == nullptr) return channel_creds;
  return std::make_shared<CompositeChannel>(channel_creds, call_creds);
}

namespace internal {

Task<Status> ApplyCallCredentials(std::shared_ptr<void> keep, runtime::EventLoop& loop,
                                  TimePoint deadline, std::shared_ptr<CancelState> cancel,
                                  std::vector<std::shared_ptr<CallCredentials>> creds,
                                  CallCredentials::CallInfo info, transport::Metadata* md) {
  std::multimap<std::string, std::string> got;
  bool blocking = false;
  for (const auto& c : creds) blocking = blocking || c->blocking();
  Status s;
  if (!blocking) {
    s = RunAll(creds, info, &got);
  } else {
    auto wait = std::make_shared<OffLoopWait>(loop);
    runtime::EventLoop* l = &loop;
    CredentialsThreads::Get().Run([keep, l, wait, creds, info]() mutable {
      auto result = std::make_shared<std::pair<Status, std::multimap<std::string, std::string>>>();
      result->first = RunAll(creds, info, &result->second);
      // The wait goes with the post: it must die on the loop's thread.
      l->Post([wait = std::move(wait), result] {
        wait->done = true;
        wait->status = std::move(result->first);
        wait->md = std::move(result->second);
        wait->event.Set();
      });
      // `keep` (and with it the loop) goes only after the post.
    });
    // Woken by the result, the deadline's timer or TryCancel (at once).
    CancelWake on_cancel(cancel, loop, [w = wait.get()] { w->event.Set(); });
    if (deadline != TimePoint::max()) wait->timer = loop.ScheduleTimer(deadline, wait.get());
    while (!wait->done) {
      {
        MutexLock lock(&cancel->mu);
        if (cancel->cancelled) {
          co_return Status(StatusCode::CANCELLED, "cancelled while the call credentials ran");
        }
      }
      if (loop.Now() >= deadline) {
        co_return Status(StatusCode::DEADLINE_EXCEEDED,
                         "deadline exceeded while the call credentials ran");
      }
      co_await wait->event.Wait();
    }
    s = std::move(wait->status);
    got = std::move(wait->md);
  }
  if (!s.ok()) co_return s;
  for (auto& [k, v] : got) md->emplace_back(k, std::move(v));
  co_return Status();
}

}  // namespace internal
}  // namespace ringrpc
