#include "driver/srq.h"

#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>

#include "driver/cmd/run.h"
#include "driver/device_object.h"
#include "driver/parent_domain.h"
#include "driver/rings/wqe_budget.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/xrc.h"

namespace onchip::driver {
namespace {

constexpr std::size_t kDoorbellRecordBytes = 8;
static_assert(sizeof(prm::SrqDoorbellRecord) <= kDoorbellRecordBytes);

Result<void> ArmRq(Srq& srq, uint32_t lwm) {
  if (srq.xrcd) {
    using In = prm::arm_xrc_srq_in;
    prm::Message<In> in;
    in.set(In::opcode, prm::ARM_XRC_SRQ)
        .set(In::op_mod, prm::ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ)
        .set(In::xrc_srqn, srq.srqn)
        .set(In::lwm, lwm);
    ONCHIP_TRY(auto out, cmd::Run<prm::arm_xrc_srq_out>(srq.device->commander(), in));
    (void)out;
    return {};
  }
  prm::Message<prm::arm_rq_in> in;
  in.set(prm::arm_rq_in::opcode, prm::ARM_RQ)
      .set(prm::arm_rq_in::op_mod, prm::ARM_RQ_IN_OP_MOD_SRQ)
      .set(prm::arm_rq_in::srq_number, srq.srqn)
      .set(prm::arm_rq_in::lwm, lwm);
  ONCHIP_TRY(auto out, cmd::Run<prm::arm_rq_out>(srq.device->commander(), in));
  (void)out;
  return {};
}

// SRQ `srqn` (an XRC SRQ's when `xrc`) on the device, with its DESTROY_SRQ or DESTROY_XRC_SRQ.
DeviceObject SrqOnDevice(cmd::Commander& commander, uint32_t srqn, bool xrc) {
  if (xrc) {
    prm::Message<prm::destroy_xrc_srq_in> in;
    in.set(prm::destroy_xrc_srq_in::opcode, prm::DESTROY_XRC_SRQ)
        .set(prm::destroy_xrc_srq_in::xrc_srqn, srqn);
    return DeviceObject::Owning<prm::destroy_xrc_srq_out>(commander, srqn, in);
  }
  prm::Message<prm::destroy_srq_in> in;
  in.set(prm::destroy_srq_in::opcode, prm::DESTROY_SRQ).set(prm::destroy_srq_in::srqn, srqn);
  return DeviceObject::Owning<prm::destroy_srq_out>(commander, srqn, in);
}

// CREATE_SRQ, or CREATE_XRC_SRQ in attr.xrcd completing on attr.cq: the SRQ, owned.
Result<DeviceObject> CreateOnDevice(Device& device, Pd& pd, const SrqAttributes& attr, uint32_t wqes,
                                uint64_t stride, const QueueBuffer& ring,
                                const QueueBuffer& doorbell, std::size_t pages,
                                uint32_t xrc_user_index) {
  if (attr.xrcd) {
    using In = prm::create_xrc_srq_in;
    using Ctx = prm::xrc_srqc_bits<In::xrc_srq_context_entry.bit_offset>;
    prm::Message<In> in(pages * 8);
    in.set(In::opcode, prm::CREATE_XRC_SRQ)
        .set(Ctx::log_xrc_srq_size, std::countr_zero(wqes))
        .set(Ctx::log_rq_stride, std::countr_zero(stride) - 4)
        .set(Ctx::log_page_size, 0)  // 4 KiB pages
        .set(Ctx::pd, pd.protection().pdn)
        .set(Ctx::xrcd, attr.xrcd->xrcdn)
        .set(Ctx::cqn, attr.cq->cqn)
        // What its receive CQEs carry: the CQ's poller finds the SRQ by it.
        .set(Ctx::user_index, xrc_user_index)
        .set(Ctx::lwm, attr.srq_limit)
        .set(Ctx::db_record_addr_h, doorbell.iova() >> 32)
        .set(Ctx::db_record_addr_l, (doorbell.iova() & 0xffffffff) >> 2);
    for (std::size_t i = 0; i < pages; ++i)
      in.set(In::pas[i], ring.iova() + i * prm::ADAPTER_PAGE_SIZE);
    ONCHIP_TRY(auto out, cmd::Run<prm::create_xrc_srq_out>(device.commander(), in));
    return SrqOnDevice(device.commander(),
                       static_cast<uint32_t>(out.get(prm::create_xrc_srq_out::xrc_srqn)), true);
  }
  using In = prm::create_srq_in;
  using Ctx = prm::srqc_bits<In::srq_context_entry.bit_offset>;
  prm::Message<In> in(pages * 8);
  in.set(In::opcode, prm::CREATE_SRQ)
      .set(Ctx::log_srq_size, std::countr_zero(wqes))
      .set(Ctx::log_rq_stride, std::countr_zero(stride) - 4)
      .set(Ctx::log_page_size, 0)  // 4 KiB pages
      .set(Ctx::pd, pd.protection().pdn)
      .set(Ctx::lwm, attr.srq_limit)
      .set(Ctx::dbr_addr, doorbell.iova());
  for (std::size_t i = 0; i < pages; ++i)
    in.set(In::pas[i], ring.iova() + i * prm::ADAPTER_PAGE_SIZE);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_srq_out>(device.commander(), in));
  return SrqOnDevice(device.commander(), static_cast<uint32_t>(out.get(prm::create_srq_out::srqn)),
                     false);
}

// An XRC SRQ's user index, reserved for `queues` in the device's XRC SRQ table: the flag and
// the next free value of a process-wide counter.
Result<uint32_t> ReserveXrcUserIndex(Device& device, const rings::WorkQueues* queues) {
  static std::atomic<uint32_t> next{0};
  for (int tries = 0; tries < 64; ++tries) {
    const uint32_t index =
        rings::kXrcUserIndexFlag | (next.fetch_add(1, std::memory_order_relaxed) & (rings::kXrcUserIndexFlag - 1));
    auto inserted = device.xrc_srqns().Insert(index, queues);
    if (inserted) return index;
    if (inserted.error().errno_value() != EEXIST) return std::unexpected(inserted.error());
  }
  return Fail(ENOMEM, "create_srq: no free XRC SRQ user index");
}

}  // namespace

Result<Srq*> CreateSrq(Pd* pd, SrqAttributes& attr) {
  if (pd == nullptr) return Fail(EINVAL, "create_srq: null PD");
  const std::shared_ptr<Device>& device = pd->device;
  const bool xrc = attr.xrcd != nullptr;
  if (xrc && attr.cq == nullptr) return Fail(EINVAL, "create_srq: an XRC SRQ needs a CQ");
  if (xrc && (attr.xrcd->device != device || attr.cq->device != device))
    return Fail(EINVAL, "create_srq: the XRC domain or the CQ belongs to another device");
  const prm::Bits gen = device->caps().cur(prm::CAP_GENERAL);
  const uint32_t max_wr = (uint32_t{1} << gen.get(prm::cmd_hca_cap::log_max_srq_sz)) - 1;
  if (attr.max_wr > max_wr) return Fail(EINVAL, "create_srq: max_wr out of range");
  const uint64_t stride = rings::SrqWqeBytes(attr.max_sge);
  if (stride > gen.get(prm::cmd_hca_cap::max_wqe_sz_rq))
    return Fail(EINVAL, "create_srq: a WQE of max_sge entries is too large");
  // max_wr 0 is valid (libmlx5 takes it); the ring still needs a WQE to post beside the unused one.
  const uint32_t wqes = std::bit_ceil(std::max(attr.max_wr, 1u) + 1);
  const uint64_t bytes = stride * wqes;
  const std::size_t pages = std::max<uint64_t>(1, bytes / prm::ADAPTER_PAGE_SIZE);

  ONCHIP_TRY(auto op, device->registry().Begin("create_srq: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life)) return Fail(EBUSY, "create_srq: its PD is being freed");
  if (xrc && !pins.Take(attr.xrcd->life)) return Fail(EBUSY, "create_srq: its XRC domain is being closed");
  if (xrc && !pins.Take(attr.cq->life)) return Fail(EBUSY, "create_srq: its CQ is being destroyed");
  ONCHIP_TRY(QueueBuffer ring,
             QueueBuffer::Allocate(pd, pages * prm::ADAPTER_PAGE_SIZE, prm::ADAPTER_PAGE_SIZE,
                                   MLX5DV_RES_TYPE_SRQ));
  if (ring.iova() % prm::ADAPTER_PAGE_SIZE != 0)
    return Fail(EINVAL, "create_srq: the allocator's SRQ buffer is not page aligned");
  // libmlx5 asks for every doorbell record as 8 bytes aligned to 8 (its DBR pages' slots), and
  // allocators are written for that (posix_memalign refuses an alignment below a pointer's).
  ONCHIP_TRY(QueueBuffer doorbell,
             QueueBuffer::Allocate(pd, kDoorbellRecordBytes, kDoorbellRecordBytes,
                                   MLX5DV_RES_TYPE_DBR));
  if (doorbell.iova() % sizeof(prm::SrqDoorbellRecord) != 0)
    return Fail(EINVAL, "create_srq: the allocator's doorbell record is not aligned");
  std::memset(doorbell.data(), 0, sizeof(prm::SrqDoorbellRecord));
  if (ring.custom()) std::memset(ring.data(), 0, ring.size());

  // The host half first: nothing after the device's SRQ exists can fail.
  auto srq = std::make_unique<Srq>();
  srq->wqe_count = wqes;
  srq->wqe_shift = static_cast<uint32_t>(std::countr_zero(stride));
  srq->max_gs = static_cast<uint32_t>(rings::SrqSgeCapacity(stride));
  srq->max_wr = wqes - 1;
  const bool locked = !(ParentDomain::From(pd) && ParentDomain::From(pd)->td);
  ONCHIP_CHECK(srq->dp.ring.Init({.ring = static_cast<std::byte*>(ring.data()),
                                  .wqe_cnt = wqes,
                                  .wqe_shift = srq->wqe_shift,
                                  .max_sge = srq->max_gs,
                                  .dbr = static_cast<prm::SrqDoorbellRecord*>(doorbell.data()),
                                  .bus = &device->bus(),
                                  .locked = locked}));
  if (xrc) {
    srq->xrc_queues.srq = &srq->dp.ring;  // no CQE can name it before the SRQ exists
    ONCHIP_TRY(srq->xrc_user_index, ReserveXrcUserIndex(*device, &srq->xrc_queues));
  }
  Result<DeviceObject> on_device = CreateOnDevice(*device, *pd, attr, wqes, stride, ring, doorbell,
                                                  pages, srq->xrc_user_index);
  if (!on_device) {
    if (xrc) device->xrc_srqns().Erase(srq->xrc_user_index);
    return std::unexpected(on_device.error());
  }
  srq->device = device;
  srq->pd = pd;
  srq->srqn = on_device->id();
  srq->xrcd = attr.xrcd;
  srq->cq = attr.cq;
  srq->ring = std::move(ring);
  srq->doorbell = std::move(doorbell);
  ibv_srq& v = srq->dp.verbs.srq;
  v.context = pd->ibv.context;
  v.pd = &pd->ibv;
  v.handle = srq->srqn;
  v.events_completed = 0;
  pthread_mutex_init(&v.mutex, nullptr);
  pthread_cond_init(&v.cond, nullptr);
  srq->dp.verbs.srq_type = xrc ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
  srq->dp.verbs.srq_num = srq->srqn;
  srq->dp.verbs.xrcd = xrc ? &attr.xrcd->verbs : nullptr;
  srq->dp.verbs.cq = xrc ? &attr.cq->dp.verbs.cq : nullptr;
  attr.max_wr = srq->max_wr;
  attr.max_sge = srq->max_gs;
  pins.Keep();
  on_device->Commit();
  device->registry().Publish<ObjectKind::kSrq>(op, srq.get(), srq->life);
  return srq.release();
}

Result<void> ModifySrq(Srq* srq, const ibv_srq_attr& attr, int mask) {
  if (srq == nullptr) return Fail(EINVAL, "modify_srq: null");
  if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return Fail(EINVAL, "modify_srq: unknown attribute");
  // mlx5 cannot resize an SRQ.
  if (mask & IBV_SRQ_MAX_WR) return Fail(EINVAL, "modify_srq: SRQs are not resizable");
  if (!(mask & IBV_SRQ_LIMIT)) return {};
  if (attr.srq_limit >= srq->wqe_count) return Fail(EINVAL, "modify_srq: srq_limit not below the ring size");
  ONCHIP_TRY(auto op, srq->device->registry().Begin("modify_srq: device closed"));
  if (!srq->life.usable()) return Fail(EIO, "modify_srq: device closed");
  return ArmRq(*srq, attr.srq_limit);
}

Result<ibv_srq_attr> QuerySrq(Srq* srq) {
  if (srq == nullptr) return Fail(EINVAL, "query_srq: null");
  ONCHIP_TRY(auto op, srq->device->registry().Begin("query_srq: device closed"));
  if (!srq->life.usable()) return Fail(EIO, "query_srq: device closed");
  const std::size_t pages = srq->ring.size() / prm::ADAPTER_PAGE_SIZE;
  ibv_srq_attr attr{};
  attr.max_wr = srq->max_wr;
  attr.max_sge = srq->max_gs;
  if (srq->xrcd) {
    using O = prm::query_xrc_srq_out;
    prm::Message<prm::query_xrc_srq_in> in;
    in.set(prm::query_xrc_srq_in::opcode, prm::QUERY_XRC_SRQ)
        .set(prm::query_xrc_srq_in::xrc_srqn, srq->srqn);
    ONCHIP_TRY(auto out, cmd::Run<O>(srq->device->commander(), in, pages * 8));
    attr.srq_limit = out.get(prm::xrc_srqc_bits<O::xrc_srq_context_entry.bit_offset>::lwm);
    return attr;
  }
  prm::Message<prm::query_srq_in> in;
  in.set(prm::query_srq_in::opcode, prm::QUERY_SRQ).set(prm::query_srq_in::srqn, srq->srqn);
  ONCHIP_TRY(auto out, cmd::Run<prm::query_srq_out>(srq->device->commander(), in, pages * 8));
  using Ctx = prm::srqc_bits<prm::query_srq_out::srq_context_entry.bit_offset>;
  attr.srq_limit = out.get(Ctx::lwm);
  return attr;
}

Result<void> ReleaseSrqOnDevice(Srq& srq, Release why) {
  auto destroyed = SrqOnDevice(srq.device->commander(), srq.srqn, srq.xrcd != nullptr).Destroy();
  if (!destroyed && why == Release::kDestroy) return destroyed;
  if (srq.xrcd) {
    srq.device->xrc_srqns().Erase(srq.xrc_user_index);
    srq.cq->life.Unpin();
    srq.xrcd->life.Unpin();
  }
  srq.pd->life.Unpin();
  return destroyed;
}

Result<void> DestroySrq(Srq* srq) {
  if (srq == nullptr) return Fail(EINVAL, "destroy_srq: null");
  return Destroy<ObjectKind::kSrq>(srq->device->registry(), srq, srq->life,
                                   "destroy_srq: a QP still receives from it");
}

Result<void> KindTraits<ObjectKind::kSrq>::ReleaseOnDevice(Srq& object, Release why) {
  return ReleaseSrqOnDevice(object, why);
}

}  // namespace onchip::driver
