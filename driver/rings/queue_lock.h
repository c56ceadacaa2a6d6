// The lock a work queue or CQ takes around its producer or consumer state: a spinlock when
// several threads may post (or poll) at once, nothing at all under a thread domain (the
// application promised one thread at a time). Critical sections are a few dozen stores, so
// spinning beats sleeping, and an uncontended pair is two atomic operations and no syscall.
#pragma once

#include <immintrin.h>

#include <atomic>

namespace onchip::driver::rings {

class QueueLock {
 public:
  explicit QueueLock(bool locked = true) : locked_(locked) {}
  QueueLock(const QueueLock&) = delete;
  QueueLock& operator=(const QueueLock&) = delete;

  void set_locked(bool locked) { locked_ = locked; }
  bool locked() const { return locked_; }

  void lock() {
    if (!locked_) return;
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) _mm_pause();
  }
  void unlock() {
    if (locked_) held_.store(false, std::memory_order_release);
  }

 private:
  bool locked_;
  std::atomic<bool> held_{false};
};

}  // namespace onchip::driver::rings
