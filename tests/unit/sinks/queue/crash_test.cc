// Crash safety of the durable queue with two named consumers: a child process appends numbered records
// with fsync per record while two consumer threads ("fast": big batches, no pauses; "slow": small
// batches with pauses, so it pins segments the fast one has passed) peek and acknowledge them. Every
// synced append, every peeked batch and every acknowledged batch is reported through a pipe. The parent
// kills the child with SIGKILL at a random moment, reopens the queue and checks, for each consumer, that
// every synced record is there in order without gaps or duplicates, that it starts after the last
// acknowledged record reported and no later than the end of the last batch it peeked (duplicates only
// from the batch in flight), and that nothing was dropped. Repeated 20 times on one queue directory
// (GPUSCOPE_QUEUE_CRASH_CYCLES raises the count).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/sinks/queue/durable_queue.h"
#include "tests/unit/sinks/queue/queue_test_util.h"

namespace gpuscope {
namespace {

constexpr std::array<const char*, 2> kConsumers = {"fast", "slow"};

DurableQueueOptions CrashOptions(const std::string& dir) {
  DurableQueueOptions o;
  o.directory = dir;
  o.max_total_bytes = 512ull << 20;  // never full here: every synced record must survive
  o.segment_bytes = 16 << 10;        // small, so kills also land around segment rolls and deletions
  o.sync = QueueSyncPolicy::kEveryAppend;
  o.consumers = {kConsumers.begin(), kConsumers.end()};
  return o;
}

std::string Payload(uint64_t n) {
  // Sizes vary with n, so kills land inside headers and payloads of different lengths.
  std::string p = std::to_string(n) + ":";
  p.append((n * 7919) % 3000, static_cast<char>('a' + n % 26));
  return p;
}

uint64_t NumberOf(const std::string& payload) { return std::stoull(payload.substr(0, payload.find(':'))); }

// One report from the child; 16 bytes, so concurrent writes to the pipe never interleave.
struct Report {
  enum Kind : uint32_t { kSynced, kPeeked, kAcked } kind;
  uint32_t consumer;  // index into kConsumers (kPeeked, kAcked)
  uint64_t n;         // the record number: appended, or last of the batch
};

void Send(int fd, Report r) {
  if (::write(fd, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) _exit(5);
}

// Peeks, checks and acknowledges forever. "slow" (index 1) takes small batches and pauses between them.
// Now and then a batch is peeked again without acknowledging the first peek.
[[noreturn]] void ConsumeForever(DurableQueue* q, uint32_t index, unsigned seed, int report_fd) {
  std::mt19937_64 rng(seed);
  const bool slow = index == 1;
  bool know_next = false;
  uint64_t next = 0;  // the first record the next batch must start with
  while (true) {
    QueueBatch b;
    const size_t max_records = slow ? 1 + rng() % 4 : 1 + rng() % 64;
    if (!q->Peek(kConsumers[index], max_records, size_t{1} << 20, &b).ok()) _exit(6);
    if (b.id == 0) {
      ::usleep(200);
      continue;
    }
    const uint64_t first = NumberOf(b.records.front());
    if (know_next && first != next) _exit(7);
    for (size_t i = 0; i < b.records.size(); ++i) {
      if (b.records[i] != Payload(first + i)) _exit(8);
    }
    const uint64_t last = first + b.records.size() - 1;
    Send(report_fd, {Report::kPeeked, index, last});
    if (rng() % 8 == 0) continue;  // not acknowledged: the next Peek returns it again
    if (!q->Ack(kConsumers[index], b.id).ok()) _exit(9);
    Send(report_fd, {Report::kAcked, index, last});
    know_next = true;
    next = last + 1;
    if (slow) ::usleep(static_cast<useconds_t>(2000 + rng() % 8000));
  }
}

[[noreturn]] void ChildRun(const std::string& dir, uint64_t first, unsigned seed, int report_fd) {
  std::unique_ptr<DurableQueue> q;
  if (!DurableQueue::Open(CrashOptions(dir), &q).ok()) _exit(3);
  for (uint32_t c = 0; c < kConsumers.size(); ++c) {
    std::thread([&q, c, seed, report_fd] { ConsumeForever(q.get(), c, seed + c, report_fd); }).detach();
  }
  for (uint64_t n = first;; ++n) {
    if (!q->Append(Payload(n)).ok()) _exit(4);
    Send(report_fd, {Report::kSynced, 0, n});
  }
}

int Cycles() {
  const char* env = std::getenv("GPUSCOPE_QUEUE_CRASH_CYCLES");
  return env != nullptr ? std::max(1, std::atoi(env)) : 20;
}

TEST(QueueCrash, SigkillWithTwoConsumersLosesNoSyncedRecordForEitherAndRedeliversOnlyTheBatchInFlight) {
  TempDir dir;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::array<uint64_t, 2> first_unacked = {0, 0};  // each consumer's persisted position
  uint64_t next_to_write = 0;
  for (int cycle = 0; cycle < Cycles(); ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const unsigned child_seed = static_cast<unsigned>(rng());
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      ChildRun(dir.path(), next_to_write, child_seed, fds[1]);
    }
    ::close(fds[1]);
    // What the child reported: bounds on where each consumer must resume.
    std::array<uint64_t, 2> lower = first_unacked;  // after the last acknowledged batch
    std::array<uint64_t, 2> upper = first_unacked;  // after the last peeked batch
    bool have_synced = false;
    uint64_t last_synced = 0;
    auto take = [&](const Report& r) {
      if (r.kind == Report::kSynced) {
        last_synced = r.n;
        have_synced = true;
      } else if (r.consumer < kConsumers.size()) {
        if (r.kind == Report::kAcked) lower[r.consumer] = std::max(lower[r.consumer], r.n + 1);
        upper[r.consumer] = std::max(upper[r.consumer], r.n + 1);
      }
    };
    // Wait for a random number of synced records, then a random extra pause, then kill mid-flight.
    const uint64_t wait_for = 1 + rng() % 60;
    uint64_t seen = 0;
    Report r{};
    while (seen < wait_for && ::read(fds[0], &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) {
      take(r);
      if (r.kind == Report::kSynced) ++seen;
    }
    ::usleep(static_cast<useconds_t>(rng() % 3000));  // a random moment, not a deadline
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited by itself with " << WEXITSTATUS(wstatus);
    while (::read(fds[0], &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) take(r);
    ::close(fds[0]);

    std::unique_ptr<DurableQueue> q;
    Status st = DurableQueue::Open(CrashOptions(dir.path()), &q);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // Every record up to here exists: all synced ones, and all any consumer peeked.
    uint64_t known_end = std::max({next_to_write, upper[0], upper[1]});
    if (have_synced) known_end = std::max(known_end, last_synced + 1);
    std::array<std::vector<std::string>, 2> records;
    for (uint32_t c = 0; c < kConsumers.size(); ++c) {
      QueueBatch all;
      ASSERT_TRUE(q->Peek(kConsumers[c], SIZE_MAX, SIZE_MAX, &all).ok());
      records[c] = std::move(all.records);
    }
    // The newest record, as seen by a consumer that has any left. A consumer with none left has
    // acknowledged everything, so everything it acknowledged was reported as peeked: known_end.
    uint64_t end = known_end;
    for (uint32_t c = 0; c < kConsumers.size(); ++c) {
      if (!records[c].empty()) end = NumberOf(records[c].back()) + 1;
    }
    ASSERT_GE(end, known_end) << "a synced or delivered record is missing";
    for (uint32_t c = 0; c < kConsumers.size(); ++c) {
      SCOPED_TRACE(kConsumers[c]);
      const uint64_t first = records[c].empty() ? end : NumberOf(records[c].front());
      // Never an acknowledged record again; duplicates only from the batch in flight.
      ASSERT_GE(first, lower[c]);
      ASSERT_LE(first, upper[c]);
      // In order, no gaps, no duplicates, up to the same newest record for both.
      uint64_t expect = first;
      for (const std::string& rec : records[c]) {
        ASSERT_EQ(rec, Payload(expect));
        ++expect;
      }
      ASSERT_EQ(expect, end);
      EXPECT_EQ(q->dropped_full(kConsumers[c]), 0u);
      EXPECT_EQ(q->pending_records(kConsumers[c]), records[c].size());
      first_unacked[c] = first;
    }
    next_to_write = end;
  }
  // Both consumers made progress, so kills also hit acknowledgements and segment deletions.
  EXPECT_GT(first_unacked[0], 0u);
  EXPECT_GT(first_unacked[1], 0u);
}

}  // namespace
}  // namespace gpuscope
