// DMA handles (ibv_alloc_dmah, ibv_dealloc_dmah) and ibv_reg_mr_ex: the libibverbs API for PCIe
// TLP Processing Hints on a memory region, added to rdma-core in 2025 (PR #1623). Debian 12's
// rdma-core 44 headers predate it, so this header declares the same names, with the same member
// order, types and enumerator values as upstream libibverbs/verbs.h, for both the driver and
// applications built against the old headers.
//
// A newer <infiniband/verbs.h> that declares these itself takes precedence: the build defines
// ONCHIP_SYSTEM_HAS_DMAH when the installed header declares ibv_alloc_dmah (the @rdma_core
// repository rule, tools/bazel/system/system_library.bzl), and this header then adds nothing.
//
// Only declarations: the C functions are exported by the onchip provider plugin (driver/verbs).
// The layouts are pinned against upstream in tests/unit/verbs/dmah_layout_test.cc.
#pragma once

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#ifndef ONCHIP_SYSTEM_HAS_DMAH

#ifdef __cplusplus
extern "C" {
#endif

// What a DMA handle is allocated on. Providers embed it first in their own object
// (rdma-core's struct verbs_dmah adds the uverbs handle).
struct ibv_dmah {
  struct ibv_context* context;
};

// The memory a steering tag targets.
enum ibv_tph_mem_type {
  IBV_TPH_MEM_TYPE_VM, /* volatile memory */
  IBV_TPH_MEM_TYPE_PM, /* persistent memory */
};

enum ibv_dmah_init_attr_mask {
  IBV_DMAH_INIT_ATTR_MASK_CPU_ID = 1 << 0,
  IBV_DMAH_INIT_ATTR_MASK_PH = 1 << 1,
  IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE = 1 << 2,
};

// PH (the 2-bit processing hint) is required; CPU_ID and TPH_MEM_TYPE come together or not at
// all (together they select a steering tag).
struct ibv_dmah_init_attr {
  uint32_t comp_mask; /* enum ibv_dmah_init_attr_mask */
  uint32_t cpu_id;
  uint8_t ph;
  uint8_t tph_mem_type; /* enum ibv_tph_mem_type */
};

// NULL with errno on failure.
struct ibv_dmah* ibv_alloc_dmah(struct ibv_context* context, struct ibv_dmah_init_attr* attr);
// 0, or the errno value (EBUSY while a memory region uses the handle).
int ibv_dealloc_dmah(struct ibv_dmah* dmah);

// An opaque provider buffer (ibv_alloc_buf); registered through IBV_REG_MR_MASK_BUF.
struct ibv_buf;

enum ibv_mr_init_attr_mask {
  IBV_REG_MR_MASK_IOVA = 1 << 0,
  IBV_REG_MR_MASK_ADDR = 1 << 1,
  IBV_REG_MR_MASK_FD = 1 << 2,
  IBV_REG_MR_MASK_FD_OFFSET = 1 << 3,
  IBV_REG_MR_MASK_DMAH = 1 << 4,
  IBV_REG_MR_MASK_BUF = 1 << 5,
};

// Only the fields whose comp_mask bit is set are read; length and access always are. ADDR and
// FD select host memory or a dma-buf (exclusive). Members up to `dmah` are checked against
// upstream verbs.h; `buf` arrived later with IBV_REG_MR_MASK_BUF and is placed at the end, where
// an extensible struct grows (no stored upstream copy showed it: re-check when one does).
struct ibv_mr_init_attr {
  size_t length;
  int access;
  uint64_t comp_mask; /* enum ibv_mr_init_attr_mask */
  uint64_t iova;
  void* addr;
  int fd;
  uint64_t fd_offset;
  struct ibv_dmah* dmah;
  struct ibv_buf* buf;
};

// NULL with errno on failure.
struct ibv_mr* ibv_reg_mr_ex(struct ibv_pd* pd, struct ibv_mr_init_attr* mr_init_attr);

#ifdef __cplusplus
}
#endif

#endif  // ONCHIP_SYSTEM_HAS_DMAH
