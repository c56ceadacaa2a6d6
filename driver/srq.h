// Shared receive queues (ibv_create_srq, ibv_create_srq_ex). An Srq begins with the data path's
// DataPathSrq (rdma-core's verbs_srq, then the SRQ ring post_srq_recv runs on).
//
// CreateSrq follows libmlx5 (srq.c) and mlx5_ib:
//   - max_wr above the device's 2^log_max_srq_sz - 1, or a WQE of max_sge entries larger than
//     max_wqe_sz_rq: EINVAL; srq_limit becomes the limit watermark (the device refuses one not
//     below the ring's size: EINVAL). max_wr 0 and max_sge 0 are valid, as in libmlx5 (pyverbs'
//     SrqInitAttr() asks for both): they get one WQE of one SGE;
//   - stride = roundup_pow2(max(32, 16 + 16 * max_sge)); WQEs = roundup_pow2(max(max_wr, 1) + 1)
//     (one WQE always stays unused; the SRQ ring links the free list); the buffer comes from
//     QueueBuffer with MLX5DV_RES_TYPE_SRQ, the doorbell record (one 32-bit receive counter)
//     with MLX5DV_RES_TYPE_DBR;
//   - reported max_wr = WQEs - 1, max_sge = (stride - 16) / 16.
// ModifySrq takes IBV_SRQ_LIMIT only (ARM_RQ with the limit as lwm); IBV_SRQ_MAX_WR asks for
// a resize, which mlx5 does not do: EINVAL. QuerySrq reads QUERY_SRQ for the limit.
// An SRQ pins its PD and is pinned by the QPs receiving from it (DestroySrq: EBUSY).
//
// XRC SRQs (SrqAttributes::xrcd and ::cq set; ibv_create_srq_ex with IBV_SRQT_XRC) are the same
// ring made with CREATE_XRC_SRQ in the domain, completing on `cq`; they pin the PD, the CQ and
// the domain. No QP names one: an XRC target QP of the domain takes a receive from it when a
// message names its number (ibv_get_srq_num). The driver gives it a user index (libmlx5's uidx:
// rings::kXrcUserIndexFlag | a counter, reserved in the device's XRC SRQ table before
// CREATE_XRC_SRQ) that its receive CQEs carry in srqn, where a CQ's poller finds the ring to
// retire, whatever became of the target QP the CQE names. Modify, query and destroy use
// ARM_XRC_SRQ, QUERY_XRC_SRQ and DESTROY_XRC_SRQ.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/cq.h"
#include "driver/pd.h"
#include "driver/queue_buffer.h"
#include "driver/registry.h"
#include "driver/rings/data_path.h"
#include "driver/xrcd.h"

namespace onchip::driver {

struct SrqAttributes {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t srq_limit = 0;
  Xrcd* xrcd = nullptr;  // XRC: its domain
  Cq* cq = nullptr;      // XRC: where its receives complete
};

struct Srq {
  rings::DataPathSrq dp;  // first: From() converts back; dp.verbs.srq is the ibv_srq
  std::shared_ptr<Device> device;
  Pd* pd = nullptr;  // as given (a parent domain's memory comes through it)
  QueueBuffer ring;
  QueueBuffer doorbell;  // one big-endian 32-bit receive counter
  uint32_t srqn = 0;
  uint32_t wqe_count = 0;  // WQEs in the ring (a power of two)
  uint32_t wqe_shift = 0;  // log2 of the stride
  uint32_t max_gs = 0;     // data segments per WQE
  uint32_t max_wr = 0;     // what the application may have posted: wqe_count - 1
  Life life;               // pinned by the QPs receiving from it
  Xrcd* xrcd = nullptr;  // XRC SRQs: the domain and the CQ they pin
  Cq* cq = nullptr;
  rings::WorkQueues xrc_queues;  // XRC SRQs: what the device's XRC SRQ table maps the index to
  uint32_t xrc_user_index = 0;   // XRC SRQs: xrc_srqc.user_index, its key in that table

  static Srq* From(ibv_srq* srq) { return reinterpret_cast<Srq*>(srq); }
};

Result<Srq*> CreateSrq(Pd* pd, SrqAttributes& attr);
Result<void> ModifySrq(Srq* srq, const ibv_srq_attr& attr, int mask);
Result<ibv_srq_attr> QuerySrq(Srq* srq);
Result<void> DestroySrq(Srq* srq);
Result<void> ReleaseSrqOnDevice(Srq& srq, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kSrq> {
  using Object = Srq;
  static Result<void> ReleaseOnDevice(Srq& object, Release why);  // srq.cc
};

}  // namespace onchip::driver
