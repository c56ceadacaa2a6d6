// The UAR page: a 4 KiB page of BAR0 that carries doorbell registers and BlueFlame buffers.
//
// ALLOC_UAR returns an index; UAR page i sits at BAR0 offset i * 4 KiB. Inside the page:
//
//   0x020  CQ doorbell      one 64-bit store {be32 arm word, be32 cqn} (MLX5_CQ_DOORBELL)
//   0x040  EQ doorbell      be32 eqn << 24 | ci: update the consumer index and re-arm
//   0x048  EQ doorbell      the same word: update the consumer index only
//   0x800  BlueFlame        bfreg k at 0x800 + k * bf_reg_size (bf_reg_size =
//                           1 << cmd_hca_cap.log_bf_reg_size); each bfreg is two halves of
//                           bf_reg_size / 2 that posts use alternately, so a WQE copy never
//                           overlaps the previous one in the CPU's write-combining buffers. A
//                           64-bit store of a send WQE's first 8 bytes to a bfreg is the plain
//                           send doorbell.
//
// Offsets are the kernel's (MLX5_CQ_DOORBELL, MLX5_BF_OFFSET, MLX5_BFREGS_PER_UAR); the EQ
// doorbell's two words are at the kernel's MLX5_EQ_DOORBEL_OFFSET and 8 bytes above it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/endian.h"
#include "uapi/prm/opcodes.h"

namespace onchip::prm {

// The value of the CQ doorbell register: the arm word (CqArmWord) and the CQ number, written
// with one 64-bit store.
struct CqUarDoorbell {
  Be32 arm_word;
  Be32 cqn;
};
static_assert(sizeof(CqUarDoorbell) == 8);

struct UarPage {
  std::byte reserved_at_0[0x20];
  CqUarDoorbell cq_doorbell;
  std::byte reserved_at_28[0x18];
  Be32 eq_doorbell_arm;
  std::byte reserved_at_44[0x4];
  Be32 eq_doorbell_update_ci;
  std::byte reserved_at_4c[0x7b4];
  std::byte blueflame[0x800];
};

inline constexpr uint64_t kUarPageBytes = ADAPTER_PAGE_SIZE;
inline constexpr uint64_t MLX5_CQ_DOORBELL = offsetof(UarPage, cq_doorbell);
inline constexpr uint64_t kEqDoorbellArm = offsetof(UarPage, eq_doorbell_arm);
inline constexpr uint64_t kEqDoorbellUpdateCi = offsetof(UarPage, eq_doorbell_update_ci);
inline constexpr uint64_t MLX5_BF_OFFSET = offsetof(UarPage, blueflame);
inline constexpr uint32_t MLX5_BFREGS_PER_UAR = 4;

static_assert(sizeof(UarPage) == kUarPageBytes);
static_assert(MLX5_CQ_DOORBELL == 0x20 && kEqDoorbellArm == 0x40 && kEqDoorbellUpdateCi == 0x48 &&
              MLX5_BF_OFFSET == 0x800);

// BAR0 offset of UAR page `index`.
constexpr uint64_t UarPageOffset(uint32_t index) { return uint64_t{index} * kUarPageBytes; }

// Page offset of bfreg `k` for a device whose bfregs are `bf_reg_size` bytes.
constexpr uint64_t BfregOffset(uint32_t k, uint32_t bf_reg_size) {
  return MLX5_BF_OFFSET + uint64_t{k} * bf_reg_size;
}
// Bytes of one half of a bfreg: the most one BlueFlame copy writes.
constexpr uint32_t BfregHalfBytes(uint32_t bf_reg_size) { return bf_reg_size / 2; }
// Whether `count` bfregs of `bf_reg_size` bytes fit the page's BlueFlame area.
constexpr bool BfregsFit(uint32_t count, uint32_t bf_reg_size) {
  return BfregOffset(count, bf_reg_size) <= kUarPageBytes;
}

// The EQ doorbell word: eqn << 24 | (ci & 0xffffff).
constexpr uint32_t EqDoorbellWord(uint32_t eqn, uint32_t ci) {
  return (eqn << 24) | (ci & 0xffffff);
}

}  // namespace onchip::prm
