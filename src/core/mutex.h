// Mutex, MutexLock and CondVar: the agent's locking primitives, annotated for clang's thread-safety
// analysis (-Wthread-safety, on in every clang build). libstdc++'s std::mutex carries no annotations, so
// a member marked GUARDED_BY(mu_) is checked only when mu_ is a gpuscope::Mutex: touching it without the
// lock, or calling a REQUIRES(mu_) method without it, is a compile error in the clang build of the test
// run. Under GCC the annotations expand to nothing.
//
//   mutable Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   void Add() EXCLUDES(mu_) { MutexLock lock(&mu_); ++count_; }
//
// Waiting: CondVar::Wait/WaitFor take the held Mutex; write the predicate as a loop in the caller, where
// the analysis sees the lock held (a predicate lambda is analysed on its own, without the lock):
//   MutexLock lock(&mu_);
//   while (!stopping_) cv_.Wait(&mu_);
//
// Thread-safety: Mutex and CondVar are safe for concurrent use, as std::mutex and
// std::condition_variable are; MutexLock belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define GPUSCOPE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GPUSCOPE_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) GPUSCOPE_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY GPUSCOPE_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) GPUSCOPE_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) GPUSCOPE_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) GPUSCOPE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) GPUSCOPE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) GPUSCOPE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EXCLUDES(...) GPUSCOPE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) GPUSCOPE_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS GPUSCOPE_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace gpuscope {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the lock is held where it cannot see it (e.g. a callback run under the lock).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

class CondVar {
 public:
  // Releases `mu` while waiting and holds it again on return (spurious wake-ups happen: loop).
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's MutexLock unlocks it
  }
  // As Wait, for at most `timeout`. Returns false when the time ran out.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  // As Wait, until `deadline`. Returns false when it passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace gpuscope
