// Completion queues (ibv_create_cq, ibv_create_cq_ex). A Cq begins with the data path's
// DataPathCq (rdma-core's verbs_cq, then the CQ ring), so the ibv_cq* / ibv_cq_ex* libibverbs
// hands back convert to Cq, and poll_cq / req_notify_cq / the ex-CQ readers (driver/rings) run
// on the ring this file describes.
//
// CreateCq follows libmlx5 and mlx5_ib:
//   - checks, in libmlx5's order: cqe 0 or above INT_MAX EINVAL; unknown create flags EINVAL;
//     wc_flags outside what the ex-CQ readers serve EOPNOTSUPP; a PD that is not a parent
//     domain EINVAL (the verbs layer refuses unknown comp_mask bits first); then mlx5_ib's: more entries than
//     2^log_max_cq_sz EINVAL, comp_vector not below the context's vectors EINVAL,
//     IGNORE_OVERRUN without the device's cq_oi EOPNOTSUPP;
//   - entries = roundup_pow2(cqe + 1) 64-byte CQEs (ibv_cq.cqe reports entries - 1); the ring is
//     whole 4 KiB pages from QueueBuffer with MLX5DV_RES_TYPE_CQ (a parent domain's allocator
//     when the CQ was created on one), every CQE's op_own MLX5_CQE_INVALID << 4; the doorbell
//     record (consumer index, arm word) is 8 bytes of MLX5DV_RES_TYPE_DBR memory;
//   - CREATE_CQ names the device's completion EQ and the shared UAR, whose CQ doorbell carries
//     arm requests (the same page libmlx5 arms through, the context's non-cached UAR);
//   - the ring polls with a lock unless IBV_CREATE_CQ_ATTR_SINGLE_THREADED; an extended CQ gets
//     start_poll / next_poll / end_poll and the readers of its wc_flags.
// A CQ is pinned by the QPs and SRQs that use it (DestroyCq: EBUSY).
//
// ResizeCq (ibv_resize_cq) follows libmlx5 and mlx5_ib: cqe below 0 or cqe * 64 above INT_MAX
// EINVAL; the same number of entries (roundup_pow2(cqe + 1)) succeeds at once; then the device's
// cq_resize (else EOPNOTSUPP), cqe 0 or more entries than 2^log_max_cq_sz EINVAL. The new ring
// comes from the same source as the first (the parent domain's allocator, or the device's), and
// under the CQ's poll lock MODIFY_CQ op_mod 1 switches the device to it; the unpolled CQEs move
// across (rings::CqRing::Resize) and ibv_cq.cqe becomes entries - 1. More unpolled CQEs than the
// new ring holds: the device's BAD_SIZE_OUTS_CQES_ERR, EINVAL, and the CQ is as it was.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/pd.h"
#include "driver/queue_buffer.h"
#include "driver/registry.h"
#include "driver/rings/data_path.h"
#include "driver/uar.h"

namespace onchip::driver {

struct CqAttributes {
  uint32_t cqe = 0;                 // at least this many completions fit
  uint32_t comp_vector = 0;
  uint64_t wc_flags = 0;            // IBV_WC_EX_WITH_*: what the ex-CQ readers must serve
  uint32_t create_flags = 0;        // IBV_CREATE_CQ_ATTR_*
  Pd* parent_domain = nullptr;      // the buffers' allocator (IBV_CQ_INIT_ATTR_MASK_PD)
  bool extended = false;            // ibv_create_cq_ex: install the ibv_cq_ex poll functions
};

struct Cq {
  rings::DataPathCq dp;  // first: From() converts back; dp.verbs.cq is the ibv_cq
  std::shared_ptr<Device> device;
  Pd* parent_domain = nullptr;
  QueueBuffer ring;
  QueueBuffer doorbell;  // prm::CqDoorbellRecord
  Bfreg* arm_register = nullptr;  // the shared UAR: CQ doorbell (arm) writes
  uint32_t cqn = 0;
  uint32_t log_entries = 0;
  uint32_t cqe_bytes = 64;
  uint64_t wc_flags = 0;
  bool single_threaded = false;
  Life life;  // pinned by the QPs and SRQs naming it

  static Cq* From(ibv_cq* cq) { return reinterpret_cast<Cq*>(cq); }
  static Cq* From(ibv_cq_ex* cq) { return reinterpret_cast<Cq*>(cq); }
  uint32_t entries() const { return uint32_t{1} << log_entries; }
  std::byte* cqe(uint32_t index) const {
    return static_cast<std::byte*>(ring.data()) + std::size_t{index & (entries() - 1)} * cqe_bytes;
  }
};

// The wc_flags an extended CQ may ask for: what the ring's readers serve.
inline constexpr uint64_t kCqSupportedWcFlags = rings::kSupportedWcFlags;

// `device` serves the CQ; a parent domain in `attr` must belong to it.
Result<Cq*> CreateCq(const std::shared_ptr<Device>& device, const CqAttributes& attr);
// ibv_resize_cq (see the header comment).
Result<void> ResizeCq(Cq* cq, int cqe);
// ibv_modify_cq, as libibverbs, uverbs and mlx5_ib check it: attr_mask 0 or beyond
// IBV_CQ_ATTR_MODERATE EINVAL; no cq_moderation on the device EOPNOTSUPP; cq_period above the
// context's 12 bits EINVAL; then MODIFY_CQ op_mod 0 sets cq_max_count and cq_period (both
// selected in modify_field_select).
Result<void> ModifyCq(Cq* cq, const ibv_modify_cq_attr& attr);
// DESTROY_CQ; EBUSY while a QP or SRQ uses it; a firmware failure leaves it usable.
Result<void> DestroyCq(Cq* cq);
// DESTROY_CQ without freeing the handle: how Close() releases a CQ.
Result<void> ReleaseCqOnDevice(Cq& cq, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kCq> {
  using Object = Cq;
  static Result<void> ReleaseOnDevice(Cq& object, Release why);  // cq.cc
};

}  // namespace onchip::driver
