#include "tools/sim/bar.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "uapi/prm/init_seg.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {
namespace {

constexpr uint64_t ByteOf(std::size_t bit_offset) { return bit_offset / 32 * 4; }

}  // namespace

Result<Bar0> Bar0::Create(const DeviceConfig& config) {
  const BarLayout layout = BarLayout::For(config);
  if (config.first_uar_index * kUarPageBytes < kInitSegmentBytes)
    return Fail(EINVAL, "sim bar0: first_uar_index overlaps the init segment");
  if (config.memic && (config.memic_bar_size == 0 || config.memic_bar_size % kUarPageBytes != 0))
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
           static_cast<uint8_t>((config.log_cmdq_size << 4) | config.log_cmdq_stride));

  // The init segment as firmware publishes it before the driver looks.
  std::span<std::byte> seg(bar.base_, kInitSegmentBytes);
  prm::Bits init(seg);
  init.set(prm::initial_seg::fw_rev_major, config.fw_rev_major)
      .set(prm::initial_seg::fw_rev_minor, config.fw_rev_minor)
      .set(prm::initial_seg::cmd_interface_rev, prm::CMD_IF_REV)
      .set(prm::initial_seg::fw_rev_subminor, config.fw_rev_subminor)
      .set(prm::initial_seg::log_cmdq_size, config.log_cmdq_size)
      .set(prm::initial_seg::log_cmdq_stride, config.log_cmdq_stride)
      .set(prm::initial_seg::initializing, 1);
  prm::Bits health(init.region(prm::initial_seg::health_buffer));
  health.set(prm::health_buffer::fw_version,
             (uint32_t{config.fw_rev_minor} << 16) | config.fw_rev_major)
      .set(prm::health_buffer::hw_id, config.hw_id);
  if (!init.ok() || !health.ok()) std::abort();  // a DeviceConfig value too wide: a bug here
  return bar;
}

Bar0::Bar0(Bar0&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      base_(std::exchange(other.base_, nullptr)),
      layout_(other.layout_),
      cmdq_geometry_(other.cmdq_geometry_) {}

Bar0::~Bar0() {
  if (base_) munmap(base_, layout_.size);
  if (fd_ >= 0) close(fd_);
}

std::atomic_ref<uint32_t> Bar0::Word(uint64_t offset) const {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_ + offset));
}

uint32_t Bar0::Load32(uint64_t offset) const {
  return std::byteswap(Word(offset).load(std::memory_order_acquire));
}
void Bar0::Store32(uint64_t offset, uint32_t value) {
  Word(offset).store(std::byteswap(value), std::memory_order_release);
}
uint32_t Bar0::Exchange32(uint64_t offset, uint32_t value) {
  return std::byteswap(Word(offset).exchange(std::byteswap(value), std::memory_order_acq_rel));
}

void Bar0::SetInitializing(bool on) {
  constexpr auto f = prm::initial_seg::initializing;
  const uint64_t off = ByteOf(f.bit_offset);
  const uint32_t bit = 1u << (31 - f.bit_offset % 32);
  auto w = Word(off);
  uint32_t cur = w.load();
  uint32_t next;
  do {
    next = std::byteswap(on ? (std::byteswap(cur) | bit) : (std::byteswap(cur) & ~bit));
  } while (!w.compare_exchange_weak(cur, next));
}

void Bar0::RestoreReadOnly() {
  const uint64_t off = ByteOf(prm::initial_seg::log_cmdq_size.bit_offset);
  static_assert(prm::initial_seg::log_cmdq_size.bit_offset % 32 == 24 &&
                prm::initial_seg::log_cmdq_stride.bit_offset % 32 == 28,
                "the geometry is the low byte of cmdq_addr_l_sz");
  auto w = Word(off);
  uint32_t cur = w.load(std::memory_order_relaxed);
  while ((std::byteswap(cur) & 0xffu) != cmdq_geometry_) {
    const uint32_t next = std::byteswap((std::byteswap(cur) & ~0xffu) | cmdq_geometry_);
    if (w.compare_exchange_weak(cur, next)) break;
  }
}

uint64_t Bar0::CmdqAddress() const {
  const uint64_t hi = Load32(ByteOf(prm::initial_seg::cmdq_phy_addr_63_32.bit_offset));
  const uint64_t lo = Load32(ByteOf(prm::initial_seg::cmdq_phy_addr_31_12.bit_offset));
  return (hi << 32) | (lo & 0xfffff000u);
}

uint32_t Bar0::TakeCommandDoorbell() {
  return Exchange32(ByteOf(prm::initial_seg::command_doorbell_vector.bit_offset), 0);
}

void Bar0::TickHealthCounter() {
  const uint64_t off = ByteOf(prm::initial_seg::health_counter.bit_offset);
  const uint32_t v = Load32(off);
  Store32(off, (v & 0xff000000u) | ((v + 1) & 0x00ffffffu));
}

uint32_t Bar0::HealthCounter() const {
  return Load32(ByteOf(prm::initial_seg::health_counter.bit_offset)) & 0x00ffffffu;
}

void Bar0::SetInternalTimer(uint64_t ticks) {
  Store32(kInternalTimerHOffset, static_cast<uint32_t>(ticks >> 32));
  Store32(kInternalTimerLOffset, static_cast<uint32_t>(ticks));
}

std::span<std::byte> Bar0::Memic() const {
  return {base_ + layout_.memic_start, layout_.memic_size};
}

SteeringTagTable Bar0::SteeringTags() const {
  return SteeringTagTable({base_ + layout_.msix_start, layout_.msix_entries * vpci::kMsixEntryBytes});
}

}  // namespace onchip::sim
