// uapi/verbs/dmah.h against upstream rdma-core's libibverbs/verbs.h (the 2025 DMA-handle API):
// member offsets, sizes, types, enumerator values and the C linkage of the functions. An
// application compiled against upstream headers hands these structs to onchip's provider, so a
// moved member would be read as another field.
#include "uapi/verbs/dmah.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

extern "C" size_t onchip_c_sizeof_mr_init_attr(void);
extern "C" size_t onchip_c_sizeof_dmah_init_attr(void);

namespace {

TEST(DmahLayout, DmahIsJustItsContext) {
  EXPECT_EQ(sizeof(ibv_dmah), 8u);
  EXPECT_EQ(offsetof(ibv_dmah, context), 0u);
  static_assert(std::is_same_v<decltype(ibv_dmah::context), ibv_context*>);
}

TEST(DmahLayout, InitAttrMembersAndMask) {
  EXPECT_EQ(offsetof(ibv_dmah_init_attr, comp_mask), 0u);
  EXPECT_EQ(offsetof(ibv_dmah_init_attr, cpu_id), 4u);
  EXPECT_EQ(offsetof(ibv_dmah_init_attr, ph), 8u);
  EXPECT_EQ(offsetof(ibv_dmah_init_attr, tph_mem_type), 9u);
  EXPECT_EQ(sizeof(ibv_dmah_init_attr), 12u);
  EXPECT_EQ(onchip_c_sizeof_dmah_init_attr(), sizeof(ibv_dmah_init_attr));
  static_assert(std::is_same_v<decltype(ibv_dmah_init_attr::comp_mask), uint32_t>);
  static_assert(std::is_same_v<decltype(ibv_dmah_init_attr::cpu_id), uint32_t>);
  static_assert(std::is_same_v<decltype(ibv_dmah_init_attr::ph), uint8_t>);
  static_assert(std::is_same_v<decltype(ibv_dmah_init_attr::tph_mem_type), uint8_t>);

  EXPECT_EQ(IBV_DMAH_INIT_ATTR_MASK_CPU_ID, 1);
  EXPECT_EQ(IBV_DMAH_INIT_ATTR_MASK_PH, 2);
  EXPECT_EQ(IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE, 4);
  EXPECT_EQ(IBV_TPH_MEM_TYPE_VM, 0);
  EXPECT_EQ(IBV_TPH_MEM_TYPE_PM, 1);
}

TEST(DmahLayout, MrInitAttrMembersAndMask) {
  EXPECT_EQ(offsetof(ibv_mr_init_attr, length), 0u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, access), 8u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, comp_mask), 16u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, iova), 24u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, addr), 32u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, fd), 40u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, fd_offset), 48u);
  EXPECT_EQ(offsetof(ibv_mr_init_attr, dmah), 56u);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::length), size_t>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::access), int>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::comp_mask), uint64_t>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::iova), uint64_t>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::addr), void*>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::fd), int>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::fd_offset), uint64_t>);
  static_assert(std::is_same_v<decltype(ibv_mr_init_attr::dmah), ibv_dmah*>);
#ifndef ONCHIP_SYSTEM_HAS_DMAH
  // onchip's own declaration: `buf` appended after `dmah`.
  EXPECT_EQ(offsetof(ibv_mr_init_attr, buf), 64u);
  EXPECT_EQ(sizeof(ibv_mr_init_attr), 72u);
  EXPECT_EQ(IBV_REG_MR_MASK_BUF, 1 << 5);
#endif
  EXPECT_EQ(onchip_c_sizeof_mr_init_attr(), sizeof(ibv_mr_init_attr));

  EXPECT_EQ(IBV_REG_MR_MASK_IOVA, 1 << 0);
  EXPECT_EQ(IBV_REG_MR_MASK_ADDR, 1 << 1);
  EXPECT_EQ(IBV_REG_MR_MASK_FD, 1 << 2);
  EXPECT_EQ(IBV_REG_MR_MASK_FD_OFFSET, 1 << 3);
  EXPECT_EQ(IBV_REG_MR_MASK_DMAH, 1 << 4);
}

// The functions' upstream signatures: checked when this file compiles, so a wrong declaration
// fails the build of this test (a test body would add nothing a compiler does not already say).
static_assert(std::is_same_v<decltype(&ibv_alloc_dmah),
                             ibv_dmah* (*)(ibv_context*, ibv_dmah_init_attr*)>);
static_assert(std::is_same_v<decltype(&ibv_dealloc_dmah), int (*)(ibv_dmah*)>);
static_assert(std::is_same_v<decltype(&ibv_reg_mr_ex), ibv_mr* (*)(ibv_pd*, ibv_mr_init_attr*)>);

}  // namespace
