// Crash safety of the durable queue: a child process appends numbered records with fsync per record
// and reports each synced number through a pipe; the parent kills it with SIGKILL at a random moment,
// reopens the queue and checks that every reported record is there, exactly once and in order, that
// acknowledged records never come back, and that the queue opens cleanly. Repeated 20 times on one
// queue directory (GPUSCOPE_QUEUE_CRASH_CYCLES raises the count).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "src/sinks/queue/durable_queue.h"
#include "tests/unit/sinks/queue/queue_test_util.h"

namespace gpuscope {
namespace {

DurableQueueOptions CrashOptions(const std::string& dir) {
  DurableQueueOptions o;
  o.directory = dir;
  o.max_total_bytes = 512ull << 20;  // never full here: every synced record must survive
  o.segment_bytes = 16 << 10;        // small, so kills also land around segment rolls
  o.sync = QueueSyncPolicy::kEveryAppend;
  return o;
}

std::string Payload(uint64_t n) {
  // Sizes vary with n, so kills land inside headers and payloads of different lengths.
  std::string p = std::to_string(n) + ":";
  p.append((n * 7919) % 3000, static_cast<char>('a' + n % 26));
  return p;
}

uint64_t NumberOf(const std::string& payload) { return std::stoull(payload.substr(0, payload.find(':'))); }

[[noreturn]] void ChildAppendForever(const std::string& dir, uint64_t first, int report_fd) {
  std::unique_ptr<DurableQueue> q;
  if (!DurableQueue::Open(CrashOptions(dir), &q).ok()) _exit(3);
  for (uint64_t n = first;; ++n) {
    if (!q->Append(Payload(n)).ok()) _exit(4);
    if (::write(report_fd, &n, sizeof(n)) != static_cast<ssize_t>(sizeof(n))) _exit(5);
  }
}

int Cycles() {
  const char* env = std::getenv("GPUSCOPE_QUEUE_CRASH_CYCLES");
  return env != nullptr ? std::max(1, std::atoi(env)) : 20;
}

TEST(QueueCrash, SigkillAtRandomMomentsLosesNoSyncedRecordAndNeverRedeliversAcked) {
  TempDir dir;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  uint64_t next_unacked = 0;  // the first record the queue must deliver
  uint64_t next_to_write = 0;
  for (int cycle = 0; cycle < Cycles(); ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      ChildAppendForever(dir.path(), next_to_write, fds[1]);
    }
    ::close(fds[1]);
    // Wait for a random number of synced records, then a random extra pause, then kill mid-flight.
    const uint64_t wait_for = 1 + rng() % 60;
    bool have_synced = false;
    uint64_t last_synced = 0;
    uint64_t seen = 0;
    uint64_t n = 0;
    while (seen < wait_for && ::read(fds[0], &n, sizeof(n)) == static_cast<ssize_t>(sizeof(n))) {
      last_synced = n;
      have_synced = true;
      ++seen;
    }
    ::usleep(static_cast<useconds_t>(rng() % 3000));  // a random moment, not a deadline
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited by itself with " << WEXITSTATUS(wstatus);
    while (::read(fds[0], &n, sizeof(n)) == static_cast<ssize_t>(sizeof(n))) {
      last_synced = n;
      have_synced = true;
    }
    ::close(fds[0]);

    std::unique_ptr<DurableQueue> q;
    Status st = DurableQueue::Open(CrashOptions(dir.path()), &q);
    ASSERT_TRUE(st.ok()) << st.ToString();
    QueueBatch all;
    ASSERT_TRUE(q->Peek(SIZE_MAX, SIZE_MAX, &all).ok());
    // In order, no gaps, no duplicates, starting right after the last acknowledged record.
    uint64_t expect = next_unacked;
    for (const std::string& r : all.records) {
      ASSERT_EQ(NumberOf(r), expect);
      ASSERT_EQ(r, Payload(expect));
      ++expect;
    }
    if (have_synced) {
      ASSERT_GE(expect, last_synced + 1) << "a synced record is missing";
    }
    EXPECT_EQ(q->dropped_full(), 0u);
    next_to_write = expect;

    // Acknowledge a random prefix; the next cycle must start after it.
    if (!all.records.empty()) {
      QueueBatch part;
      const size_t take = rng() % (all.records.size() + 1);
      if (take > 0) {
        ASSERT_TRUE(q->Peek(take, SIZE_MAX, &part).ok());
        ASSERT_EQ(part.records.size(), take);
        ASSERT_TRUE(q->Ack(part.id).ok());
        next_unacked += take;
      }
    }
  }
}

}  // namespace
}  // namespace gpuscope
