#include "tools/sim/device.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace onchip::sim {

Result<std::unique_ptr<Device>> Device::Create(const DeviceConfig& config) {
  ONCHIP_TRY(Bar0 bar, Bar0::Create(config));
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return Fail(errno, "sim device: eventfd");
  return std::unique_ptr<Device>(new Device(config, std::move(bar), efd));
}

Device::Device(const DeviceConfig& config, Bar0 bar, int efd)
    : config_(config),
      bar_(std::move(bar)),
      firmware_(config_, bar_.layout(), bar_.Memic(), bar_.SteeringTags(), iommu_),
      queue_(bar_, iommu_, firmware_, config_),
      eventfd_(efd) {
  thread_ = std::thread([this] { Run(); });
}

Device::~Device() {
  stop_.store(true);
  Kick();
  thread_.join();
  close(eventfd_);
}

vpci::SharedMemory Device::bar0() const { return {bar_.fd(), bar_.size()}; }

Result<void> Device::MapDma(const vpci::DmaRegion& region) { return iommu_.Map(region); }

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
  const auto born = std::chrono::steady_clock::now();
  bool initializing = true;
  const int timeout_ms = static_cast<int>(std::max<int64_t>(1, config_.idle_poll_period.count()));
  while (!stop_.load()) {
    pollfd p{eventfd_, POLLIN, 0};
    poll(&p, 1, timeout_ms);
    uint64_t drained;
    [[maybe_unused]] ssize_t n = read(eventfd_, &drained, sizeof drained);
    if (stop_.load()) break;
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    if (initializing && now - born >= config_.init_delay) {
      bar_.SetInitializing(false);
      initializing = false;
    }
    bar_.SetInternalTimer(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - born).count()));
    bar_.RestoreReadOnly();
    if (!health_stopped_.load()) bar_.TickHealthCounter();
    if (!initializing) queue_.Poll();
  }
}

}  // namespace onchip::sim
