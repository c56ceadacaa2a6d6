#include "tools/sim/bar.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "uapi/prm/init_seg.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim {
namespace {

using IS = prm::initial_seg;
namespace init_seg = prm::init_seg;

}  // namespace

Result<Bar0> Bar0::Create(const DeviceConfig& config) {
  const BarLayout layout = BarLayout::For(config);
  static_assert(init_seg::kBytes <= vpci::kEngineSleepWordOffset);
  if (prm::UarPageOffset(config.first_uar_index) < vpci::kEngineSleepWordOffset + prm::kUarPageBytes)
    return Fail(EINVAL, "sim bar0: first_uar_index overlaps the init segment or the engine's page");
  if (config.memic &&
      (config.memic_bar_size == 0 || config.memic_bar_size % prm::kUarPageBytes != 0))
    return Fail(EINVAL, "sim bar0: memic_bar_size must be a non-zero multiple of 4 KiB");
  if (config.log_cmdq_size > 5 || config.log_cmdq_size + config.log_cmdq_stride > 12 ||
      config.log_cmdq_stride < 6)
    return Fail(EINVAL, "sim bar0: cmdq geometry");

  const int fd = memfd_create("onchip-sim-bar0", MFD_CLOEXEC);
  if (fd < 0) return Fail(errno, "sim bar0: memfd_create");
  if (ftruncate(fd, static_cast<off_t>(layout.size)) != 0) {
    const int e = errno;
    close(fd);
    return Fail(e, "sim bar0: ftruncate");
  }
  void* p = mmap(nullptr, layout.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return Fail(e, "sim bar0: mmap");
  }
  Bar0 bar(fd, static_cast<std::byte*>(p), layout,
           init_seg::CmdqGeometry{config.log_cmdq_size, config.log_cmdq_stride});
  ONCHIP_CHECK(bar.CreateClockPage());

  // The init segment as firmware publishes it before the driver looks.
  std::span<std::byte> seg(bar.base_, init_seg::kBytes);
  prm::Bits init(seg);
  init.set(prm::initial_seg::fw_rev_major, config.fw_rev_major)
      .set(prm::initial_seg::fw_rev_minor, config.fw_rev_minor)
      .set(prm::initial_seg::cmd_interface_rev, prm::CMD_IF_REV)
      .set(prm::initial_seg::fw_rev_subminor, config.fw_rev_subminor)
      .set(prm::initial_seg::log_cmdq_size, config.log_cmdq_size)
      .set(prm::initial_seg::log_cmdq_stride, config.log_cmdq_stride)
      .set(prm::initial_seg::initializing, 1);
  prm::Bits health(init.region(prm::initial_seg::health_buffer));
  // The health buffer's fw_version repeats the fw_rev word.
  health.set(prm::health_buffer::fw_version, bar.Read32(init_seg::kFwRev))
      .set(prm::health_buffer::hw_id, config.hw_id);
  if (!init.ok() || !health.ok()) std::abort();  // a DeviceConfig value too wide: a bug here
  return bar;
}

Result<void> Bar0::CreateClockPage() {
  clock_fd_ = memfd_create("onchip-sim-clock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (clock_fd_ < 0) return Fail(errno, "sim bar0: memfd_create (clock page)");
  if (ftruncate(clock_fd_, prm::kUarPageBytes) != 0) return Fail(errno, "sim bar0: ftruncate (clock page)");
  void* p = mmap(nullptr, prm::kUarPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, clock_fd_, 0);
  if (p == MAP_FAILED) return Fail(errno, "sim bar0: mmap (clock page)");
  clock_ = static_cast<std::byte*>(p);
  // The device's mapping above stays writable; every later one, a client's included, can only
  // read (mm/shmem.c, shmem_mmap and seal_check_future_write).
  if (fcntl(clock_fd_, F_ADD_SEALS,
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0)
    return Fail(errno, "sim bar0: seal the clock page");
  return {};
}

Bar0::Bar0(Bar0&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, nullptr)),
      clock_fd_(std::exchange(other.clock_fd_, -1)),
      clock_(std::exchange(other.clock_, nullptr)),
      layout_(other.layout_),
      cmdq_geometry_(other.cmdq_geometry_) {}

Bar0::~Bar0() {
  if (base_) munmap(base_, layout_.size);
  if (fd_ >= 0) close(fd_);
  if (clock_) munmap(clock_, prm::kUarPageBytes);
  if (clock_fd_ >= 0) close(clock_fd_);
}

bool Bar0::Backable(uint64_t offset, uint64_t length) const {
  constexpr uint64_t kPage = prm::kUarPageBytes;
  return offset % kPage == 0 && length % kPage == 0 && length != 0 &&
         offset >= layout_.uar_start && offset <= layout_.size && length <= layout_.size - offset;
}

Result<void> Bar0::BackPages(uint64_t offset, uint64_t length, int fd, uint64_t fd_offset) {
  if (!Backable(offset, length) || fd_offset % prm::kUarPageBytes != 0)
    return Fail(EINVAL, "sim bar0: backing must be whole pages past the init segment");
  void* p = mmap(base_ + offset, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                 static_cast<off_t>(fd_offset));
  if (p == MAP_FAILED) return Fail(errno, "sim bar0: back pages");
  return {};
}

Result<void> Bar0::RestorePages(uint64_t offset, uint64_t length) {
  if (!Backable(offset, length)) return Fail(EINVAL, "sim bar0: restore outside the BAR");
  return BackPages(offset, length, fd_, offset);
}

std::atomic_ref<uint32_t> Bar0::Word(uint64_t offset) const {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_ + offset));
}

std::atomic_ref<uint32_t> Bar0::ClockWord(uint64_t offset) const {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(clock_ + (offset - kClockPageOffset)));
}

uint32_t Bar0::Read32(uint64_t offset) const {
  return std::byteswap(Word(offset).load(std::memory_order_acquire));
}
void Bar0::Write32(uint64_t offset, uint32_t value) {
  Word(offset).store(std::byteswap(value), std::memory_order_release);
}
uint32_t Bar0::Exchange32(uint64_t offset, uint32_t value) {
  return std::byteswap(Word(offset).exchange(std::byteswap(value), std::memory_order_acq_rel));
}

void Bar0::SetInitializing(bool on) {
  auto w = Word(init_seg::kInitializing);
  uint32_t cur = w.load();
  uint32_t next;
  do {
    next = std::byteswap(prm::IntoWord(IS::initializing, std::byteswap(cur), on ? 1 : 0));
  } while (!w.compare_exchange_weak(cur, next));
}

void Bar0::RestoreReadOnly() {
  auto w = Word(init_seg::kCmdqAddrLSz);
  uint32_t cur = w.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t host = std::byteswap(cur);
    const uint32_t want = prm::IntoWord(
        IS::log_cmdq_stride, prm::IntoWord(IS::log_cmdq_size, host, cmdq_geometry_.log_cmdq_size),
        cmdq_geometry_.log_cmdq_stride);
    if (want == host || w.compare_exchange_weak(cur, std::byteswap(want))) break;
  }
}

uint64_t Bar0::CmdqAddress() const { return init_seg::ReadCmdqAddress(*this); }

uint32_t Bar0::TakeCommandDoorbell() {
  // Looked at with a plain load first: nearly every engine pass finds no ring, and a locked
  // exchange would cost each of them the line the driver rings.
  if (Word(init_seg::kCmdDbell).load(std::memory_order_relaxed) == 0) return 0;
  return Exchange32(init_seg::kCmdDbell, 0);
}

void Bar0::TickHealthCounter() {
  const uint32_t v = Read32(init_seg::kHealthCounter);
  const uint32_t next = prm::IntoWord(IS::health_counter, v, prm::FromWord(IS::health_counter, v) + 1);
  Write32(init_seg::kHealthCounter, next);
  ClockWord(init_seg::kHealthCounter).store(std::byteswap(next), std::memory_order_release);
}

uint32_t Bar0::HealthCounter() const { return init_seg::ReadHealthCounter(*this); }

void Bar0::SetEngineSleeping(bool sleeping) {
  Word(vpci::kEngineSleepWordOffset).store(sleeping ? vpci::kEngineAsleep : 0, std::memory_order_seq_cst);
}

bool Bar0::EngineSleeping() const {
  return Word(vpci::kEngineSleepWordOffset).load(std::memory_order_seq_cst) != 0;
}

void Bar0::SetInternalTimer(uint64_t ticks) {
  const uint32_t high = std::byteswap(static_cast<uint32_t>(ticks >> 32));
  const uint32_t low = std::byteswap(static_cast<uint32_t>(ticks));
  Write32(init_seg::kInternalTimerH, static_cast<uint32_t>(ticks >> 32));
  Write32(init_seg::kInternalTimerL, static_cast<uint32_t>(ticks));
  ClockWord(init_seg::kInternalTimerH).store(high, std::memory_order_release);
  ClockWord(init_seg::kInternalTimerL).store(low, std::memory_order_release);
}

std::span<std::byte> Bar0::Memic() const {
  return {base_ + layout_.memic_start, layout_.memic_size};
}

SteeringTagTable Bar0::SteeringTags() const {
  return SteeringTagTable({base_ + layout_.msix_start, layout_.msix_entries * vpci::kMsixEntryBytes});
}

}  // namespace onchip::sim
