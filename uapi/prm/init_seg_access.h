// The init segment (BAR0 offset 0) as 32-bit registers: which word holds a field, how a field
// sits in its word, and the accesses the driver and the software ConnectX make.
//
// Two generated layouts describe the segment (uapi/prm/init_seg.h): `initial_seg`, the PRM's
// bit view (fw_rev_major, cmd_interface_rev, log_cmdq_size, initializing, health_counter ...),
// and `mlx5_init_seg`, the kernel's dword view, which also names the words the PRM table leaves
// reserved (internal_timer_h/l). Every offset here comes from one of them; nothing is typed in.
//
// Registers are read and written one whole 32-bit word at a time, as MMIO is. The accessors take
// any register file with `uint32_t Read32(uint64_t byte_offset) const` and
// `void Write32(uint64_t byte_offset, uint32_t host_value)` (the big-endian swap is the register
// file's): the driver's driver::bus::Bus and the software ConnectX's Bar0 both are one.
#pragma once

#include <concepts>
#include <cstdint>

#include "uapi/prm/field.h"
#include "uapi/prm/init_seg.h"

namespace onchip::prm {

template <class R>
concept InitSegRegisters = requires(const R& r, R& w, uint64_t offset, uint32_t value) {
  { r.Read32(offset) } -> std::same_as<uint32_t>;
  w.Write32(offset, value);
};

// Byte offset of the 32-bit word that holds field F.
template <FixedOffset F>
  requires(F::bit_width <= 32)
constexpr uint64_t WordOffset(F) {
  return F::bit_offset / 32 * 4;
}

// F's value inside `word` (host order, as Read32 returns it).
template <FixedOffset F>
  requires(F::bit_width <= 32)
constexpr uint32_t FromWord(F, uint32_t word) {
  constexpr unsigned shift = 32 - F::bit_offset % 32 - F::bit_width;
  return static_cast<uint32_t>((word >> shift) & F::max_value);
}

// `word` with F replaced by `value` (masked to F's width; callers pass values that fit).
template <FixedOffset F>
  requires(F::bit_width <= 32)
constexpr uint32_t IntoWord(F, uint32_t word, uint32_t value) {
  constexpr unsigned shift = 32 - F::bit_offset % 32 - F::bit_width;
  constexpr uint32_t mask = static_cast<uint32_t>(F::max_value << shift);
  return (word & ~mask) | ((value << shift) & mask);
}

template <FixedOffset F, InitSegRegisters R>
  requires(F::bit_width <= 32)
uint32_t ReadField(const R& regs, F f) {
  return FromWord(f, regs.Read32(WordOffset(f)));
}

// The init segment's words, named as the kernel's struct mlx5_init_seg names them.
namespace init_seg {

using IS = initial_seg;
using Words = mlx5_init_seg;

inline constexpr uint64_t kFwRev = WordOffset(Words::fw_rev);                      // 0x000
inline constexpr uint64_t kCmdifRevFwSub = WordOffset(Words::cmdif_rev_fw_sub);    // 0x004
inline constexpr uint64_t kCmdqAddrH = WordOffset(Words::cmdq_addr_h);             // 0x010
inline constexpr uint64_t kCmdqAddrLSz = WordOffset(Words::cmdq_addr_l_sz);        // 0x014
inline constexpr uint64_t kCmdDbell = WordOffset(Words::cmd_dbell);                // 0x018
inline constexpr uint64_t kInitializing = WordOffset(Words::initializing);         // 0x1fc
inline constexpr uint64_t kInternalTimerH = WordOffset(Words::internal_timer_h);   // 0x1000
inline constexpr uint64_t kInternalTimerL = WordOffset(Words::internal_timer_l);   // 0x1004
inline constexpr uint64_t kHealthCounter = WordOffset(Words::health_counter);      // 0x1010
// The whole segment as the PRM sizes it (0x400c bytes): a device's UAR pages start beyond it.
inline constexpr uint64_t kBytes = size_bytes<IS>;
// The words a driver reads, up to the health counter a health poller watches: a BAR0 shorter
// than this has no usable init segment.
inline constexpr uint64_t kDriverBytes = kHealthCounter + 4;

// The kernel's dword view and the PRM's bit view agree on where each word is.
static_assert(kFwRev == WordOffset(IS::fw_rev_major) && kFwRev == WordOffset(IS::fw_rev_minor));
static_assert(kCmdifRevFwSub == WordOffset(IS::cmd_interface_rev) &&
              kCmdifRevFwSub == WordOffset(IS::fw_rev_subminor));
static_assert(kCmdqAddrH == WordOffset(IS::cmdq_phy_addr_63_32));
static_assert(kCmdqAddrLSz == WordOffset(IS::cmdq_phy_addr_31_12) &&
              kCmdqAddrLSz == WordOffset(IS::log_cmdq_size) &&
              kCmdqAddrLSz == WordOffset(IS::log_cmdq_stride));
static_assert(kCmdDbell == WordOffset(IS::command_doorbell_vector));
static_assert(kInitializing == WordOffset(IS::initializing));
static_assert(kHealthCounter == WordOffset(IS::health_counter) &&
              kHealthCounter == WordOffset(IS::health_syndrome));
// The timer words lie in a range the PRM table reserves (which is why only the kernel's view
// names them).
constexpr bool InReservedRange(uint64_t byte_offset, uint64_t bytes) {
  for (const ReservedBits& r : IS::reserved_ranges)
    if (r.bit_offset <= byte_offset * 8 && byte_offset * 8 + bytes * 8 <= r.bit_offset + r.bit_width)
      return true;
  return false;
}
static_assert(InReservedRange(kInternalTimerH, 4) && InReservedRange(kInternalTimerL, 4));

// Bits [11:0] of cmdq_addr_l_sz: nic_interface, log_cmdq_size, log_cmdq_stride. The device owns
// them; the driver writes them back as it read them when it programs the address.
inline constexpr uint32_t kCmdqAddrLowDeviceBits = 0xfff;
static_assert(IS::cmdq_phy_addr_31_12.bit_offset % 32 == 0 && IS::cmdq_phy_addr_31_12.bit_width == 20);

struct FwRevision {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint16_t subminor = 0;
  friend constexpr bool operator==(const FwRevision&, const FwRevision&) = default;
};

template <InitSegRegisters R>
FwRevision ReadFwRevision(const R& regs) {
  const uint32_t rev = regs.Read32(kFwRev);
  const uint32_t sub = regs.Read32(kCmdifRevFwSub);
  return {static_cast<uint16_t>(FromWord(IS::fw_rev_major, rev)),
          static_cast<uint16_t>(FromWord(IS::fw_rev_minor, rev)),
          static_cast<uint16_t>(FromWord(IS::fw_rev_subminor, sub))};
}

template <InitSegRegisters R>
uint16_t ReadCmdInterfaceRev(const R& regs) {
  return static_cast<uint16_t>(ReadField(regs, IS::cmd_interface_rev));
}

// The queue geometry the device offers (read-only bits of cmdq_addr_l_sz).
struct CmdqGeometry {
  uint32_t log_cmdq_size = 0;
  uint32_t log_cmdq_stride = 0;
};

template <InitSegRegisters R>
CmdqGeometry ReadCmdqGeometry(const R& regs) {
  const uint32_t low = regs.Read32(kCmdqAddrLSz);
  return {FromWord(IS::log_cmdq_size, low), FromWord(IS::log_cmdq_stride, low)};
}

// Programs the command queue's bus address (4 KiB aligned). High word first: the device
// latches the address when the low word is written. The low word's device-owned bits are
// written back as read, so a device that stores the whole word keeps them.
template <InitSegRegisters R>
void WriteCmdqAddress(R& regs, uint64_t iova) {
  const uint32_t low = regs.Read32(kCmdqAddrLSz);
  regs.Write32(kCmdqAddrH, static_cast<uint32_t>(iova >> 32));
  regs.Write32(kCmdqAddrLSz, (static_cast<uint32_t>(iova) & ~kCmdqAddrLowDeviceBits) |
                                 (low & kCmdqAddrLowDeviceBits));
}

// The command queue address as the driver programmed it.
template <InitSegRegisters R>
uint64_t ReadCmdqAddress(const R& regs) {
  const uint64_t high = regs.Read32(kCmdqAddrH);
  const uint32_t low = regs.Read32(kCmdqAddrLSz);
  return (high << 32) | (low & ~kCmdqAddrLowDeviceBits);
}

// Starts the commands whose slot bits are set (1 << slot each).
template <InitSegRegisters R>
void RingCommandDoorbell(R& regs, uint32_t slots) {
  regs.Write32(kCmdDbell, slots);
}

// initializing: firmware is not ready for commands while it is set.
template <InitSegRegisters R>
bool FirmwareInitializing(const R& regs) {
  return ReadField(regs, IS::initializing) != 0;
}

// health_counter[23:0]: firmware advances it while it is alive.
template <InitSegRegisters R>
uint32_t ReadHealthCounter(const R& regs) {
  return ReadField(regs, IS::health_counter);
}

// The free-running device clock. The high word is read again after the low one; a carry between
// the reads shows as a changed high word, and the low word is then read again.
template <InitSegRegisters R>
uint64_t ReadInternalTimer(const R& regs) {
  const uint32_t high = regs.Read32(kInternalTimerH);
  uint32_t low = regs.Read32(kInternalTimerL);
  const uint32_t high2 = regs.Read32(kInternalTimerH);
  if (high2 != high) low = regs.Read32(kInternalTimerL);
  return (uint64_t{high2} << 32) | low;
}

}  // namespace init_seg
}  // namespace onchip::prm
