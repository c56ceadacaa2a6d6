#include "tools/sim/device_thread.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tools/sim/device.h"

namespace onchip::sim {

namespace {

// futex_waitv(2) takes at most this many futexes: the control word and 127 devices.
constexpr std::size_t kMaxWaiters = 128;

// sched_setattr(2)'s argument, version 0 (48 bytes; glibc 2.36 has no wrapper).
struct SchedAttr {
  uint32_t size = sizeof(SchedAttr);
  uint32_t sched_policy = SCHED_OTHER;
  uint64_t sched_flags = 0;
  int32_t sched_nice = 0;
  uint32_t sched_priority = 0;
  uint64_t sched_runtime = 0;
  uint64_t sched_deadline = 0;
  uint64_t sched_period = 0;
};

// Asks for the shortest slice a normal thread may have (kernel/sched/syscalls.c clamps
// sched_runtime to 0.1-100 ms), so that the thread's wake-up preempts a thread that runs on a
// default slice (kernel/sched/fair.c check_preempt_wakeup_fair, PREEMPT_SHORT). Kernels before
// EEVDF ignore the field, and there a sleeper's wake-up preempts by its vruntime credit anyway.
void AskForShortSlice() {
  SchedAttr attr;
  attr.sched_runtime = 100'000;  // ns
  (void)syscall(SYS_sched_setattr, 0, &attr, 0);
}

// SCHED_FIFO at the lowest realtime priority, or (refused: EPERM without CAP_SYS_NICE or
// RLIMIT_RTPRIO, or not wanted) a normal thread with the short slice. Returns whether the
// thread is realtime now.
bool ApplySched(bool realtime) {
  if (realtime) {
    SchedAttr attr;
    attr.sched_policy = SCHED_FIFO;
    attr.sched_priority = 1;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return true;
  }
  AskForShortSlice();
  return false;
}

}  // namespace

Result<std::shared_ptr<DeviceThread>> DeviceThread::Create() {
  return std::shared_ptr<DeviceThread>(new DeviceThread());
}

DeviceThread::DeviceThread() { thread_ = std::thread([this] { Run(); }); }

DeviceThread::~DeviceThread() {
  // Devices hold the thread, so none is attached when it goes.
  stop_.store(true);
  Nudge();
  thread_.join();
}

std::size_t DeviceThread::device_count() const {
  std::lock_guard lock(mu_);
  return devices_.size();
}

std::chrono::nanoseconds DeviceThread::cpu_time() const {
  if (!thread_clock_valid_.load()) return std::chrono::nanoseconds{0};
  timespec ts{};
  if (clock_gettime(thread_clock_.load(), &ts) != 0) return std::chrono::nanoseconds{0};
  return std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
}

int DeviceThread::sched_policy() const {
  // The kernel's answer for the thread's id: glibc's pthread_getschedparam may answer from what
  // it cached before the thread set its own policy.
  const pid_t tid = tid_.load();
  return tid == 0 ? SCHED_OTHER : sched_getscheduler(tid);
}

void DeviceThread::Nudge() {
  control_.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, &control_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void DeviceThread::Attach(Device& device) {
  waiting_.fetch_add(1);
  {
    std::lock_guard lock(mu_);
    devices_.push_back(&device);
    device.engine_.SetServer(this);
    ++generation_;
    RecomputePolicy();
  }
  waiting_.fetch_sub(1);
  Nudge();
}

void DeviceThread::Detach(Device& device) {
  {
    // The thread holds mu_ for the whole of a wakeup's service, so once we hold it the thread
    // is outside every device's service; with the device gone from the list it never enters
    // this one's again, nor reads its sleep word (kicks are drained under mu_ too).
    waiting_.fetch_add(1);
    std::lock_guard lock(mu_);
    std::erase(devices_, &device);
    device.engine_.SetServer(nullptr);
    ++generation_;
    RecomputePolicy();
  }
  waiting_.fetch_sub(1);
  // A thread asleep in futex_waitv may still wait on the departing device's sleep word, in the
  // BAR its owner unmaps next; the nudge ends that wait at once and the set of words is rebuilt
  // before the next one.
  Nudge();
}

void DeviceThread::RecomputePolicy() {
  std::vector<const DeviceConfig*> configs;
  configs.reserve(devices_.size());
  for (const Device* d : devices_) configs.push_back(&d->config());
  policy_.Recompute(configs);
}

bool DeviceThread::TrySleepAll() {
  for (Device* d : devices_) d->SetSleeping(true);
  bool found = false;
  // Every device gets its look even after one found work: a pass may hand another device a
  // packet, and the words are cleared below for all of them alike.
  for (Device* d : devices_) found |= d->FoundWorkBeforeSleep();
  if (!found) return true;
  for (Device* d : devices_) d->SetSleeping(false);
  return false;
}

void DeviceThread::Wait(std::chrono::steady_clock::time_point until) {
  std::vector<futex_waitv>& waiters = waiters_;
  {
    std::lock_guard lock(mu_);
    if (devices_.empty()) until = std::chrono::steady_clock::time_point::max();
    else until = std::min(until, std::chrono::steady_clock::now() + policy_.idle_poll_period());
    waiters.clear();
    // The control word's value now: a Nudge after this (an Attach or Detach that changes the
    // set read here) makes the wait return at once.
    waiters.push_back(futex_waitv{.val = control_.load(std::memory_order_seq_cst),
                                  .uaddr = reinterpret_cast<uintptr_t>(&control_),
                                  .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG,
                                  .__reserved = 0});
    // The destructor stores stop_ before its Nudge: a Nudge this value already counts may have
    // been the last one.
    if (stop_.load(std::memory_order_seq_cst)) return;
    for (const Device* d : devices_) {
      d->ForEachSleepWord([&](uint32_t* word) {
        if (waiters.size() == kMaxWaiters) {
          // Past futex_waitv's limit a word's device is looked at every millisecond.
          until = std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
          return;
        }
        // Shared: the words are in memfds that client processes map too.
        waiters.push_back(futex_waitv{.val = vpci::kEngineAsleep,
                                      .uaddr = reinterpret_cast<uintptr_t>(word),
                                      .flags = FUTEX_32,
                                      .__reserved = 0});
      });
    }
  }
  timespec ts{};
  timespec* timeout = nullptr;
  if (until != std::chrono::steady_clock::time_point::max()) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch());
    ts.tv_sec = static_cast<time_t>(ns.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns.count() % 1'000'000'000);
    timeout = &ts;
  }
  // An absolute CLOCK_MONOTONIC deadline (steady_clock is CLOCK_MONOTONIC on Linux). EAGAIN (a
  // word changed before the wait), ETIMEDOUT and a wake-up all mean the same: look again.
  (void)syscall(SYS_futex_waitv, waiters.data(), waiters.size(), 0, timeout, CLOCK_MONOTONIC);
}

void DeviceThread::Run() {
  clockid_t cid;
  if (pthread_getcpuclockid(pthread_self(), &cid) == 0) {
    thread_clock_.store(cid);
    thread_clock_valid_.store(true);
  }
  tid_.store(gettid());
  AskForShortSlice();
  bool realtime_tried = false;  // an ask refused once is not asked again
  bool awake = false;
  auto now = std::chrono::steady_clock::now();
  // The soonest engine retry due among the devices (max: none).
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (!stop_.load()) {
    // Let an Attach or Detach in (mu_ was released at the end of the last wakeup).
    // A realtime thread's yield lets no normal thread run on its CPU: it sleeps instead.
    while (waiting_.load() != 0) {
      if (realtime_applied_)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      else
        std::this_thread::yield();
    }
    const bool woke = !awake;
    if (!awake) Wait(deadline);
    if (stop_.load()) break;
    std::lock_guard lock(mu_);
    // Under mu_ no device attaches or leaves: one device's pass may hand another a packet at
    // once (wire.h).
    const Port::Serving serving(this);
    // The scheduling the attached devices want (ThreadPolicy), applied by the thread itself.
    const bool realtime = policy_.realtime();
    if (realtime != realtime_applied_ && !(realtime && realtime_tried)) {
      realtime_applied_ = ApplySched(realtime);
      realtime_tried |= realtime;
    }
    // Only this thread writes the count: a load and a store, no locked increment.
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // Awake now: every device's word cleared, including one attached while the thread was
    // awake (it starts asleep, and the thread waits on it from this pass on).
    for (Device* d : devices_)
      if (d->sleeping()) d->SetSleeping(false);
    // The clock, read once per wakeup, keeps every device's internal timer moving and times
    // the retries and the idle period.
    now = std::chrono::steady_clock::now();
    bool progressed = false;
    deadline = std::chrono::steady_clock::time_point::max();
    for (Device* d : devices_) {
      // Awake, a device gets a full service only when its lock-free look finds something
      // (Device::NeedsService); a wakeup out of the wait services every device, as does the
      // look before sleeping (TrySleepAll).
      if (woke || d->NeedsService(now))
        progressed |= d->Service(now).progressed;
      else
        d->Tick(now);
      deadline = std::min(deadline, d->deadline());
    }
    if (progressed) {
      policy_.Worked(now);
      awake = true;
      continue;
    }
    if (policy_.Spin(now)) {
      awake = true;
      continue;
    }
    awake = !TrySleepAll();
    if (awake) policy_.Worked(now);
  }
}

}  // namespace onchip::sim
