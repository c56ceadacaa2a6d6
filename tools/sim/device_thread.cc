#include "tools/sim/device_thread.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tools/sim/device.h"

namespace onchip::sim {

Result<std::shared_ptr<DeviceThread>> DeviceThread::Create() {
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return Fail(errno, "sim device thread: eventfd");
  return std::shared_ptr<DeviceThread>(new DeviceThread(efd));
}

DeviceThread::DeviceThread(int control_fd) : control_fd_(control_fd) {
  thread_ = std::thread([this] { Run(); });
}

DeviceThread::~DeviceThread() {
  // Devices hold the thread, so none is attached when it goes.
  stop_.store(true);
  Nudge();
  thread_.join();
  close(control_fd_);
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

void DeviceThread::Nudge() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(control_fd_, &one, sizeof one);
}

void DeviceThread::Attach(Device& device) {
  waiting_.fetch_add(1);
  {
    std::lock_guard lock(mu_);
    devices_.push_back(&device);
    device.engine_.SetServer(this);
    ++generation_;
    RecomputePeriods();
  }
  waiting_.fetch_sub(1);
  Nudge();
}

void DeviceThread::Detach(Device& device) {
  {
    // The thread holds mu_ for the whole of a wakeup's service, so once we hold it the thread
    // is outside every device's service; with the device gone from the list it never enters
    // this one's again, nor reads its eventfd (kicks are drained under mu_ too).
    waiting_.fetch_add(1);
    std::lock_guard lock(mu_);
    std::erase(devices_, &device);
    device.engine_.SetServer(nullptr);
    ++generation_;
    RecomputePeriods();
  }
  waiting_.fetch_sub(1);
  // A thread asleep in poll(2) may still watch the departing device's eventfd, which its owner
  // closes next; the nudge makes that poll return at once and the set is rebuilt before the
  // next one.
  Nudge();
}

void DeviceThread::RecomputePeriods() {
  spin_period_ = nap_ = idle_period_ = {};
  idle_poll_period_ = {};
  bool first = true;
  for (const Device* d : devices_) {
    const DeviceConfig& c = d->config();
    spin_period_ = std::max(spin_period_, c.engine_spin_period);
    idle_period_ = std::max(idle_period_, c.engine_idle_period);
    nap_ = first ? c.engine_nap : std::min(nap_, c.engine_nap);
    idle_poll_period_ = first ? c.idle_poll_period : std::min(idle_poll_period_, c.idle_poll_period);
    first = false;
  }
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

void DeviceThread::Run() {
  clockid_t cid;
  if (pthread_getcpuclockid(pthread_self(), &cid) == 0) {
    thread_clock_.store(cid);
    thread_clock_valid_.store(true);
  }
  // Naps are short; the default 50 us timer slack would make each one several times longer.
  prctl(PR_SET_TIMERSLACK, 1000UL);
  bool awake = false;
  // The clock is read once per wakeup: the spin check below uses the last wakeup's reading.
  auto now = std::chrono::steady_clock::now();
  auto last_work = now;
  // The soonest engine retry due among the devices (max: none).
  auto deadline = std::chrono::steady_clock::time_point::max();
  // The poll set: the control eventfd, then each device's kick eventfd, rebuilt (under mu_)
  // when the device set changed. The fds are only polled outside mu_, never read there.
  std::vector<pollfd> fds;
  uint64_t fds_generation = ~uint64_t{0};
  std::chrono::microseconds spin_period{0}, nap{0};
  while (!stop_.load()) {
    // Let an Attach or Detach in (mu_ was released at the end of the last wakeup).
    while (waiting_.load() != 0) std::this_thread::yield();
    bool polled = false;
    if (awake) {
      if (now - last_work >= spin_period) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(nap);
        const timespec ts{.tv_sec = 0, .tv_nsec = static_cast<long>(ns.count())};
        nanosleep(&ts, nullptr);
      }
    } else {
      int timeout_ms = -1;  // no device: only Attach or the destructor wakes the thread
      {
        std::lock_guard lock(mu_);
        if (fds_generation != generation_) {
          fds.assign(1, pollfd{control_fd_, POLLIN, 0});
          for (const Device* d : devices_) fds.push_back(pollfd{d->KickFd(), POLLIN, 0});
          fds_generation = generation_;
        }
        if (!devices_.empty())
          timeout_ms = static_cast<int>(std::max<int64_t>(1, idle_poll_period_.count()));
      }
      if (deadline != std::chrono::steady_clock::time_point::max() && timeout_ms >= 0) {
        const auto before = std::chrono::steady_clock::now();
        const int64_t wait_ms =
            deadline > before
                ? (std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - before).count() +
                   999'999) / 1'000'000
                : 0;
        timeout_ms = static_cast<int>(std::min<int64_t>(wait_ms, timeout_ms));
      }
      poll(fds.data(), fds.size(), timeout_ms);
      polled = true;
    }
    if (stop_.load()) break;
    std::lock_guard lock(mu_);
    // Under mu_ no device attaches or leaves: one device's pass may hand another a packet at
    // once (wire.h).
    const Port::Serving serving(this);
    spin_period = spin_period_;
    nap = nap_;
    // Only this thread writes the count: a load and a store, no locked increment.
    wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (polled) {
      // Kicks that arrived while awake are drained here too, at the cost of one early wakeup.
      uint64_t drained;
      [[maybe_unused]] ssize_t n = read(control_fd_, &drained, sizeof drained);
      for (Device* d : devices_) d->DrainKicks();
    }
    // Awake now: every device's word cleared, including one attached while the thread was
    // awake (it starts asleep, and the thread polls it from this pass on).
    for (Device* d : devices_)
      if (d->sleeping()) d->SetSleeping(false);
    // The clock, read once per wakeup, keeps every device's internal timer moving and times
    // the spin, the retries and the idle period.
    now = std::chrono::steady_clock::now();
    bool progressed = false;
    deadline = std::chrono::steady_clock::time_point::max();
    for (Device* d : devices_) {
      // Awake, a device gets a full service only when its lock-free look finds something
      // (Device::NeedsService); a wakeup out of poll(2) services every device, as does the look
      // before sleeping (TrySleepAll).
      if (polled || d->NeedsService(now))
        progressed |= d->Service(now).progressed;
      else
        d->Tick(now);
      deadline = std::min(deadline, d->deadline());
    }
    if (progressed) {
      last_work = now;
      awake = true;
    } else if (now - last_work >= idle_period_) {
      awake = !TrySleepAll();
      if (awake) last_work = now;
    } else {
      awake = true;
    }
  }
}

}  // namespace onchip::sim
