#include "tools/sim/device.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace onchip::sim {

Result<std::unique_ptr<Device>> Device::Create(const DeviceConfig& config) {
  ONCHIP_TRY(Bar0 bar, Bar0::Create(config));
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return Fail(errno, "sim device: eventfd");
  // An InfiniBand port gets its LID from the fabric's subnet manager before it exists (the
  // firmware reports it from the first command on); the engine's Attach takes the reservation.
  DeviceConfig resolved = config;
  resolved.lid = 0;
  if (config.port_type == DeviceConfig::PortType::kInfiniBand &&
      (resolved.lid = Fabric::Instance().ReserveLid(config.lid)) == 0) {
    close(efd);
    return Fail(EADDRINUSE, "sim device: the LID is taken (or no unicast LID is free)");
  }
  return std::unique_ptr<Device>(new Device(resolved, std::move(bar), efd));
}

Device::Device(const DeviceConfig& config, Bar0 bar, int efd)
    : config_(config),
      bar_(std::move(bar)),
      firmware_(config_, bar_.layout(), bar_.Memic(), bar_.SteeringTags(), iommu_),
      queue_(bar_, iommu_, firmware_, config_),
      born_(std::chrono::steady_clock::now()),
      engine_(firmware_, iommu_, bar_, config_, [this] { Kick(); }, born_),
      eventfd_(efd) {
  // The engine starts asleep: the first doorbell wakes it.
  bar_.SetEngineSleeping(true);
  engine_.SetSleeping(true);
  thread_ = std::thread([this] { Run(); });
}

Device::~Device() {
  stop_.store(true);
  Kick();
  thread_.join();
  engine_.Detach();
  close(eventfd_);
}

bool Device::engine_sleeping() const { return bar_.EngineSleeping(); }

bool Device::TrySleep() {
  bar_.SetEngineSleeping(true);
  engine_.SetSleeping(true);
  if (!engine_.Pass().progressed && !engine_.InboundPending()) return true;
  bar_.SetEngineSleeping(false);
  engine_.SetSleeping(false);
  return false;
}

vpci::SharedMemory Device::bar0() const { return {bar_.fd(), bar_.size()}; }

Result<void> Device::MapDma(const vpci::DmaRegion& region) { return iommu_.Map(region); }

Result<void> Device::MapProcessDma(uint64_t iova, uint64_t length, pid_t pid,
                                   uint64_t remote_address) {
  return iommu_.MapProcess(iova, length, pid, remote_address);
}

Result<void> Device::UnmapDma(uint64_t iova, uint64_t length) {
  return iommu_.Unmap(iova, length);
}

std::optional<vpci::TphCapability> Device::tph() const {
  if (!config_.mkey_pcie_tph) return std::nullopt;
  return vpci::TphCapability{.st_table_offset = bar_.layout().msix_start,
                             .st_table_size = static_cast<uint16_t>(bar_.layout().msix_entries)};
}

void Device::Kick() {
  const uint64_t one = 1;
  // Never blocks: the eventfd is non-blocking and its counter cannot realistically overflow.
  [[maybe_unused]] ssize_t n = write(eventfd_, &one, sizeof one);
}

void Device::ReleaseStall() {
  queue_.ReleaseStall();
  Kick();
}

std::chrono::nanoseconds Device::thread_cpu_time() const {
  if (!thread_clock_valid_.load()) return std::chrono::nanoseconds{0};
  timespec ts{};
  if (clock_gettime(thread_clock_.load(), &ts) != 0) return std::chrono::nanoseconds{0};
  return std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
}

void Device::Run() {
  clockid_t cid;
  if (pthread_getcpuclockid(pthread_self(), &cid) == 0) {
    thread_clock_.store(cid);
    thread_clock_valid_.store(true);
  }
  // Naps are short; the default 50 us timer slack would make each one several times longer.
  prctl(PR_SET_TIMERSLACK, 1000UL);
  bool initializing = true;
  const int idle_ms = static_cast<int>(std::max<int64_t>(1, config_.idle_poll_period.count()));
  bool awake = false;
  auto last_work = std::chrono::steady_clock::now();
  uint64_t deadline_ns = 0;
  while (!stop_.load()) {
    if (awake) {
      if (std::chrono::steady_clock::now() - last_work >= config_.engine_spin_period) {
        const auto nap = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.engine_nap);
        const timespec ts{.tv_sec = 0, .tv_nsec = static_cast<long>(nap.count())};
        nanosleep(&ts, nullptr);
      }
    } else {
      int timeout_ms = idle_ms;
      if (deadline_ns != 0) {
        const uint64_t now_ns = engine_.NowNs();
        const uint64_t wait_ms = deadline_ns > now_ns ? (deadline_ns - now_ns + 999'999) / 1'000'000 : 0;
        timeout_ms = static_cast<int>(std::min<uint64_t>(wait_ms, static_cast<uint64_t>(idle_ms)));
      }
      pollfd p{eventfd_, POLLIN, 0};
      poll(&p, 1, timeout_ms);
      bar_.SetEngineSleeping(false);
      engine_.SetSleeping(false);
      // Kicks that arrived while awake are drained here too, at the cost of one early wakeup.
      uint64_t drained;
      [[maybe_unused]] ssize_t n = read(eventfd_, &drained, sizeof drained);
    }
    if (stop_.load()) break;
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    if (initializing && now - born_ >= config_.init_delay) {
      bar_.SetInitializing(false);
      initializing = false;
    }
    bar_.SetInternalTimer(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - born_).count()));
    bar_.RestoreReadOnly();
    if (!health_stopped_.load()) bar_.TickHealthCounter();
    if (initializing) continue;
    // The data path runs before the commands found in this pass: a command sees the work rung
    // before it executed (a CQ resize finds the completions of sends posted before it, as on
    // hardware, where the engine does not wait for the command interface). A pass that ran
    // commands gets a second engine pass for what they changed.
    Engine::PassResult pass = engine_.Pass();
    if (queue_.Poll() > 0) {
      const Engine::PassResult after = engine_.Pass();
      pass.progressed |= after.progressed;
      pass.next_deadline_ns = after.next_deadline_ns;
    }
    deadline_ns = pass.next_deadline_ns;
    if (pass.progressed) {
      last_work = now;
      awake = true;
    } else if (now - last_work >= config_.engine_idle_period) {
      awake = !TrySleep();
      if (awake) last_work = now;
    } else {
      awake = true;
    }
  }
}

}  // namespace onchip::sim
