// CompletionQueue and Alarm alone (no calls): delivery, AsyncNext's
// deadline, Shutdown's drain, the defined outcomes of misuse, and many
// threads on one queue.
#include "ringrpc/client/completion_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }

TEST(CompletionQueue, AsyncNextTimesOutOnAnEmptyQueue) {
  CompletionQueue cq;
  void* tag = nullptr;
  bool ok = true;
  const auto start = steady_clock::now();
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now() + milliseconds(30)),
            CompletionQueue::TIMEOUT);
  EXPECT_GE(steady_clock::now() - start, milliseconds(29));
  // A deadline in the past polls.
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now() - milliseconds(1)),
            CompletionQueue::TIMEOUT);
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, steady_clock::now()), CompletionQueue::TIMEOUT);
}

TEST(CompletionQueue, TagsComeOutOnceInOrderWithTheirOk) {
  CompletionQueue cq;
  auto core = internal::CqAccess::Core(&cq);
  ASSERT_TRUE(core->Begin(Tag(1)));
  ASSERT_TRUE(core->Begin(Tag(2)));
  core->End(Tag(2), false);
  core->End(Tag(1), true);
  void* tag;
  bool ok;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(2));
  EXPECT_FALSE(ok);
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(1));
  EXPECT_TRUE(ok);
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now()), CompletionQueue::TIMEOUT);
}

TEST(CompletionQueue, ShutdownDeliversWhatIsOwedThenSaysShutdown) {
  CompletionQueue cq;
  auto core = internal::CqAccess::Core(&cq);
  ASSERT_TRUE(core->Begin(Tag(1)));
  ASSERT_TRUE(core->Begin(Tag(2)));
  core->End(Tag(1), true);
  cq.Shutdown();
  void* tag;
  bool ok;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(1));
  // Tag 2 is still owed: Next waits for it rather than saying SHUTDOWN.
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now() + milliseconds(20)),
            CompletionQueue::TIMEOUT);
  std::thread late([&] {
    std::this_thread::sleep_for(milliseconds(20));
    core->End(Tag(2), true);
  });
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(2));
  EXPECT_FALSE(cq.Next(&tag, &ok));
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now()), CompletionQueue::SHUTDOWN);
  late.join();
}

TEST(CompletionQueue, WorkAfterShutdownIsRefusedWithOkFalseThenDropped) {
  CompletionQueue cq;
  auto core = internal::CqAccess::Core(&cq);
  ASSERT_TRUE(core->Begin(Tag(1)));
  cq.Shutdown();
  // Not yet drained (tag 1 owed): the refused tag still comes out, ok false.
  EXPECT_FALSE(core->Begin(Tag(9)));
  void* tag;
  bool ok = true;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(9));
  EXPECT_FALSE(ok);
  core->End(Tag(1), true);
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(1));
  EXPECT_FALSE(cq.Next(&tag, &ok));
  // After Next said so: refused and dropped (no one would see it).
  EXPECT_FALSE(core->Begin(Tag(10)));
  EXPECT_FALSE(cq.Next(&tag, &ok));
  Alarm alarm;
  alarm.Set(&cq, system_clock::now(), Tag(11));
  EXPECT_FALSE(cq.Next(&tag, &ok));
}

TEST(CompletionQueue, DestroyedWithTagsOwedDropsThem) {
  std::shared_ptr<internal::CqCore> core;
  {
    CompletionQueue cq;
    core = internal::CqAccess::Core(&cq);
    ASSERT_TRUE(core->Begin(Tag(1)));
    ASSERT_TRUE(core->Begin(Tag(2)));
    core->End(Tag(1), true);  // undelivered
  }
  core->End(Tag(2), true);  // the operation ends after the queue: dropped
  EXPECT_FALSE(core->Begin(Tag(3)));
  void* tag;
  bool ok;
  EXPECT_EQ(core->Wait(&tag, &ok, internal::CqClock::now()), internal::CqCore::Next::kShutdown);
}

TEST(Alarm, FiresAtItsDeadlineWithOkTrue) {
  CompletionQueue cq;
  Alarm alarm;
  const auto start = steady_clock::now();
  alarm.Set(&cq, system_clock::now() + milliseconds(40), Tag(5));
  void* tag;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(5));
  EXPECT_TRUE(ok);
  EXPECT_GE(steady_clock::now() - start, milliseconds(39));
}

TEST(Alarm, CancelDeliversAtOnceWithOkFalse) {
  CompletionQueue cq;
  Alarm alarm;
  alarm.Set(&cq, system_clock::now() + std::chrono::hours(1), Tag(6));
  alarm.Cancel();
  void* tag;
  bool ok = true;
  ASSERT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now() + milliseconds(500)),
            CompletionQueue::GOT_EVENT);
  EXPECT_EQ(tag, Tag(6));
  EXPECT_FALSE(ok);
  alarm.Cancel();  // again: nothing more
  EXPECT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now()), CompletionQueue::TIMEOUT);
}

TEST(Alarm, DestroyingASetAlarmCancelsIt) {
  CompletionQueue cq;
  {
    Alarm moved_from;
    moved_from.Set(&cq, steady_clock::now() + std::chrono::hours(1), Tag(7));
    Alarm alarm(std::move(moved_from));  // the setting moves with it
  }
  void* tag;
  bool ok = true;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(7));
  EXPECT_FALSE(ok);
}

TEST(Alarm, AnEarlierAlarmWakesASleepingNext) {
  CompletionQueue cq;
  Alarm late, early;
  late.Set(&cq, system_clock::now() + std::chrono::hours(1), Tag(1));
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(30));
    early.Set(&cq, system_clock::now() + milliseconds(10), Tag(2));
  });
  void* tag;
  bool ok = false;
  ASSERT_EQ(cq.AsyncNext(&tag, &ok, system_clock::now() + std::chrono::seconds(20)),
            CompletionQueue::GOT_EVENT);
  EXPECT_EQ(tag, Tag(2));
  EXPECT_TRUE(ok);
  setter.join();
  late.Cancel();
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(1));
  EXPECT_FALSE(ok);
}

TEST(Alarm, ShutdownWaitsForASetAlarm) {
  CompletionQueue cq;
  Alarm alarm;
  alarm.Set(&cq, system_clock::now() + milliseconds(30), Tag(3));
  cq.Shutdown();
  void* tag;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(3));
  EXPECT_TRUE(ok);
  EXPECT_FALSE(cq.Next(&tag, &ok));
}

// Four threads on one queue, four producing: every tag exactly once.
TEST(CompletionQueue, ManyThreadsDrainEveryTagOnce) {
  CompletionQueue cq;
  auto core = internal::CqAccess::Core(&cq);
  constexpr int kProducers = 4, kPerProducer = 20000;
  std::vector<std::vector<intptr_t>> seen(4);
  std::vector<std::thread> consumers;
  for (int c = 0; c < 4; ++c) {
    consumers.emplace_back([&, c] {
      void* tag;
      bool ok;
      while (cq.Next(&tag, &ok)) {
        if (ok) seen[c].push_back(reinterpret_cast<intptr_t>(tag));
      }
    });
  }
  std::vector<std::thread> producers;
  std::atomic<int> begun{0};
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const intptr_t n = 1 + p * kPerProducer + i;
        if (core->Begin(Tag(n))) {
          begun.fetch_add(1);
          core->End(Tag(n), true);
        }
      }
    });
  }
  for (auto& t : producers) t.join();
  cq.Shutdown();
  for (auto& t : consumers) t.join();
  std::set<intptr_t> all;
  size_t total = 0;
  for (auto& v : seen) {
    total += v.size();
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(begun.load(), kProducers * kPerProducer);
  EXPECT_EQ(total, size_t{kProducers * kPerProducer});
  EXPECT_EQ(all.size(), total);
}

}  // namespace
}  // namespace ringrpc
