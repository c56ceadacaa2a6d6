#include "driver/cq.h"

#include <infiniband/mlx5dv.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>

#include "driver/cmd/run.h"
#include "driver/device_object.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/uar_page.h"

namespace onchip::driver {
namespace {

constexpr uint32_t kKnownCreateFlags =
    IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
constexpr uint32_t kCqeSz64 = 0;          // cqc.cqe_sz: 64-byte CQEs
constexpr uint32_t kLogMaxCqEntries = 24;  // libmlx5's own bound on a CQ

// CQ `cqn` on the device, with its DESTROY_CQ.
DeviceObject CqOnDevice(cmd::Commander& commander, uint32_t cqn) {
  prm::Message<prm::destroy_cq_in> in;
  in.set(prm::destroy_cq_in::opcode, prm::DESTROY_CQ).set(prm::destroy_cq_in::cqn, cqn);
  return DeviceObject::Owning<prm::destroy_cq_out>(commander, cqn, in);
}

}  // namespace

Result<Cq*> CreateCq(const std::shared_ptr<Device>& device, const CqAttributes& attr) {
  if (!device) return Fail(EINVAL, "create_cq: not a context of this driver");
  if (attr.cqe == 0 || attr.cqe > INT_MAX) return Fail(EINVAL, "create_cq: cqe out of range");
  if (attr.create_flags & ~kKnownCreateFlags) return Fail(EINVAL, "create_cq: unknown flags");
  if (attr.wc_flags & ~kCqSupportedWcFlags)
    return Fail(EOPNOTSUPP, "create_cq: a wc_flags reader this driver does not serve");
  if (attr.parent_domain && !attr.parent_domain->is_parent_domain())
    return Fail(EINVAL, "create_cq: the PD given is not a parent domain");
  if (attr.parent_domain && attr.parent_domain->device != device)
    return Fail(EINVAL, "create_cq: the parent domain belongs to another device");
  // Entries: a power of two above cqe (one slot always stays empty).
  const uint64_t entries = std::bit_ceil(uint64_t{attr.cqe} + 1);
  const uint32_t log_entries = static_cast<uint32_t>(std::countr_zero(entries));
  const prm::Bits gen = device->caps().cur(prm::CAP_GENERAL);
  if (log_entries > kLogMaxCqEntries || log_entries > gen.get(prm::cmd_hca_cap::log_max_cq_sz))
    return Fail(EINVAL, "create_cq: more entries than the device's CQs hold");
  if (attr.comp_vector >= static_cast<uint32_t>(device->verbs()->num_comp_vectors))
    return Fail(EINVAL, "create_cq: comp_vector not below the context's num_comp_vectors");
  if ((attr.create_flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) && !gen.get(prm::cmd_hca_cap::cq_oi))
    return Fail(EOPNOTSUPP, "create_cq: the device cannot ignore CQ overrun (cq_oi)");

  ONCHIP_TRY(auto op, device->registry().Begin("create_cq: device closed"));
  const uint32_t cqe_bytes = 64;
  const std::size_t ring_bytes = bus::RoundUpPage(entries * cqe_bytes);
  // A CQ not made on a parent domain takes its memory from the device's provider.
  ONCHIP_TRY(QueueBuffer ring, attr.parent_domain
                                   ? QueueBuffer::Allocate(attr.parent_domain, ring_bytes,
                                                           prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_CQ)
                                   : QueueBuffer::Allocate(*device, ring_bytes,
                                                           prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_CQ));
  if (ring.iova() % prm::ADAPTER_PAGE_SIZE != 0)
    return Fail(EINVAL, "create_cq: the allocator's CQ buffer is not page aligned");
  ONCHIP_TRY(QueueBuffer doorbell,
             attr.parent_domain
                 ? QueueBuffer::Allocate(attr.parent_domain, sizeof(prm::CqDoorbellRecord),
                                         sizeof(prm::CqDoorbellRecord), MLX5DV_RES_TYPE_DBR)
                 : QueueBuffer::Allocate(*device, sizeof(prm::CqDoorbellRecord),
                                         sizeof(prm::CqDoorbellRecord), MLX5DV_RES_TYPE_DBR));
  if (doorbell.iova() % sizeof(prm::CqDoorbellRecord) != 0)
    return Fail(EINVAL, "create_cq: the allocator's doorbell record is not 8-byte aligned");
  // Both record words zero; the ring's Init marks every CQE invalid.
  std::memset(doorbell.data(), 0, sizeof(prm::CqDoorbellRecord));
  ONCHIP_TRY(Bfreg* uar, device->uars().Shared());
  ONCHIP_TRY(std::byte* arm_doorbell,
             device->bus().Bar0Window(prm::UarPageOffset(uar->uar_index) + prm::MLX5_CQ_DOORBELL,
                                      sizeof(uint64_t)));

  using In = prm::create_cq_in;
  constexpr auto cqc = In::cq_context;
  const std::size_t pages = ring_bytes / prm::ADAPTER_PAGE_SIZE;
  prm::Message<In> in(pages * 8);
  in.set(In::opcode, prm::CREATE_CQ)
      .set(cqc.cqe_sz, kCqeSz64)
      .set(cqc.log_cq_size, log_entries)
      .set(cqc.uar_page, uar->uar_index)
      .set(cqc.c_eqn_or_apu_element, device->comp_eqn())
      .set(cqc.log_page_size, 0)  // 4 KiB pages
      .set(cqc.dbr_addr, doorbell.iova());
  for (std::size_t i = 0; i < pages; ++i)
    in.set(In::pas[i], ring.iova() + i * prm::ADAPTER_PAGE_SIZE);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_cq_out>(device->commander(), in));
  // The device has the CQ: any failure from here gives it back.
  DeviceObject on_device =
      CqOnDevice(device->commander(), static_cast<uint32_t>(out.get(prm::create_cq_out::cqn)));

  auto cq = std::make_unique<Cq>();
  const rings::CqRingDesc desc{
      .buf = static_cast<std::byte*>(ring.data()),
      .cqe_cnt = static_cast<uint32_t>(entries),
      .cqe_size = cqe_bytes,
      .dbr = static_cast<prm::CqDoorbellRecord*>(doorbell.data()),
      .cqn = on_device.id(),
      .uar_cq_doorbell = arm_doorbell,
      .bus = &device->bus(),
      .qpns = &device->qpns(),
      .xrc_srqns = &device->xrc_srqns(),
      .locked = (attr.create_flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED) == 0,
  };
  ONCHIP_CHECK(cq->dp.ring.Init(desc));
  if (attr.extended) ONCHIP_CHECK(rings::InstallCqExOps(&cq->dp.verbs.cq_ex, attr.wc_flags));
  cq->device = device;
  cq->parent_domain = attr.parent_domain;
  cq->ring = std::move(ring);
  cq->doorbell = std::move(doorbell);
  cq->arm_register = uar;
  cq->cqn = on_device.id();
  cq->log_entries = log_entries;
  cq->cqe_bytes = cqe_bytes;
  cq->wc_flags = attr.wc_flags;
  cq->single_threaded = (attr.create_flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED) != 0;
  cq->dp.verbs.cq.context = device->verbs();
  cq->dp.verbs.cq.cqe = static_cast<int>(entries - 1);
  cq->dp.verbs.cq.handle = cq->cqn;
  on_device.Commit();
  device->registry().Publish<ObjectKind::kCq>(op, cq.get(), cq->life);
  return cq.release();
}

Result<void> ResizeCq(Cq* cq, int cqe) {
  if (cq == nullptr) return Fail(EINVAL, "resize_cq: null");
  if (cqe < 0 || int64_t{cqe} * 64 > INT_MAX) return Fail(EINVAL, "resize_cq: cqe out of range");
  const uint64_t entries = std::bit_ceil(uint64_t(cqe) + 1);
  if (entries == cq->entries()) return {};
  Device& device = *cq->device;
  const prm::Bits gen = device.caps().cur(prm::CAP_GENERAL);
  if (!gen.get(prm::cmd_hca_cap::cq_resize))
    return Fail(EOPNOTSUPP, "resize_cq: the device cannot resize CQs (cq_resize)");
  const uint32_t log_entries = static_cast<uint32_t>(std::countr_zero(entries));
  if (cqe == 0 || log_entries > kLogMaxCqEntries ||
      log_entries > gen.get(prm::cmd_hca_cap::log_max_cq_sz))
    return Fail(EINVAL, "resize_cq: entries outside what the device's CQs hold");

  ONCHIP_TRY(auto op, device.registry().Begin("resize_cq: device closed"));
  (void)op;
  const std::size_t ring_bytes = bus::RoundUpPage(entries * cq->cqe_bytes);
  ONCHIP_TRY(QueueBuffer ring, cq->parent_domain
                                   ? QueueBuffer::Allocate(cq->parent_domain, ring_bytes,
                                                           prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_CQ)
                                   : QueueBuffer::Allocate(device, ring_bytes,
                                                           prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_CQ));
  if (ring.iova() % prm::ADAPTER_PAGE_SIZE != 0)
    return Fail(EINVAL, "resize_cq: the allocator's CQ buffer is not page aligned");

  using In = prm::modify_cq_in;
  using Ctx = prm::cqc_bits<In::cq_context.bit_offset>;
  const std::size_t pages = ring_bytes / prm::ADAPTER_PAGE_SIZE;
  prm::Message<In> in(pages * 8);
  in.set(In::opcode, prm::MODIFY_CQ)
      .set(In::op_mod, prm::CQ_OPMOD_RESIZE)
      .set(In::cqn, cq->cqn)
      .set(In::modify_field_select_resize_field_select,
           prm::MLX5_MODIFY_CQ_MASK_LOG_SIZE | prm::MLX5_MODIFY_CQ_MASK_PG_OFFSET |
               prm::MLX5_MODIFY_CQ_MASK_PG_SIZE)
      .set(Ctx::cqe_sz, cq->cqe_bytes == 128 ? 1 : kCqeSz64)
      .set(Ctx::log_cq_size, log_entries)
      .set(Ctx::log_page_size, 0)  // 4 KiB pages
      .set(Ctx::page_offset, 0);
  for (std::size_t i = 0; i < pages; ++i)
    in.set(In::pas[i], ring.iova() + i * prm::ADAPTER_PAGE_SIZE);
  Result<void> resized = cq->dp.ring.Resize(
      static_cast<std::byte*>(ring.data()), static_cast<uint32_t>(entries), [&]() -> Result<void> {
        ONCHIP_TRY(auto out, cmd::Run<prm::modify_cq_out>(device.commander(), in));
        (void)out;
        return {};
      });
  // The ring runs on the new buffer once the command succeeded, even when it found no resize CQE.
  if (cq->dp.ring.buffer() == ring.data()) {
    cq->ring = std::move(ring);
    cq->log_entries = log_entries;
    cq->dp.verbs.cq.cqe = static_cast<int>(entries - 1);
  }
  return resized;
}

Result<void> ModifyCq(Cq* cq, const ibv_modify_cq_attr& attr) {
  if (cq == nullptr) return Fail(EINVAL, "modify_cq: null");
  if (attr.attr_mask == 0 || attr.attr_mask >= IBV_CQ_ATTR_RESERVED)
    return Fail(EINVAL, "modify_cq: attr_mask empty or beyond IBV_CQ_ATTR_MODERATE");
  Device& device = *cq->device;
  if (!device.caps().cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::cq_moderation))
    return Fail(EOPNOTSUPP, "modify_cq: the device has no CQ moderation (cq_moderation)");
  using In = prm::modify_cq_in;
  using Ctx = prm::cqc_bits<In::cq_context.bit_offset>;
  if (attr.moderate.cq_period > Ctx::cq_period.max_value)
    return Fail(EINVAL, "modify_cq: cq_period above what the CQ context holds");
  ONCHIP_TRY(auto op, device.registry().Begin("modify_cq: device closed"));
  (void)op;
  prm::Message<In> in;
  in.set(In::opcode, prm::MODIFY_CQ)
      .set(In::op_mod, prm::CQ_OPMOD_MODIFY)
      .set(In::cqn, cq->cqn)
      .set(In::modify_field_select_resize_field_select,
           prm::CQ_MODIFY_PERIOD | prm::CQ_MODIFY_COUNT)
      .set(Ctx::cq_period, attr.moderate.cq_period)
      .set(Ctx::cq_max_count, attr.moderate.cq_count);
  ONCHIP_TRY(auto out, cmd::Run<prm::modify_cq_out>(device.commander(), in));
  (void)out;
  return {};
}

Result<void> ReleaseCqOnDevice(Cq& cq, Release) {
  return CqOnDevice(cq.device->commander(), cq.cqn).Destroy();
}

Result<void> DestroyCq(Cq* cq) {
  if (cq == nullptr) return Fail(EINVAL, "destroy_cq: null");
  return Destroy<ObjectKind::kCq>(cq->device->registry(), cq, cq->life,
                                  "destroy_cq: a QP or SRQ still uses it");
}

Result<void> KindTraits<ObjectKind::kCq>::ReleaseOnDevice(Cq& object, Release why) {
  return ReleaseCqOnDevice(object, why);
}

}  // namespace onchip::driver
