#include "driver/raw_qp.h"

#include <bit>
#include <cerrno>

#include "driver/cmd/run.h"
#include "driver/device_object.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/wq.h"

namespace onchip::driver {
namespace {

constexpr uint32_t kPage = 4096;
constexpr uint32_t kSendWqeBbLog = 6;
// tirc.self_lb_block: bit 1 blocks multicast loopback (bit 0 would block unicast).
constexpr uint32_t kSelfLbBlockMulticast = 0x2;

uint32_t Log2(uint64_t v) { return static_cast<uint32_t>(std::countr_zero(v)); }

// The pas[] entries of a ring of `bytes` at a page-aligned `iova`, after the command's layout.
template <class In>
void SetPages(prm::Message<In>& in, uint64_t iova, uint64_t bytes) {
  const uint64_t pages = bytes <= kPage ? 1 : (bytes + kPage - 1) / kPage;
  for (uint64_t i = 0; i < pages; ++i)
    in.set(prm::Element<64>{In::size_bits + i * 64, "pas"}, iova + i * kPage);
}

uint64_t PageCount(uint64_t bytes) { return bytes <= kPage ? 1 : (bytes + kPage - 1) / kPage; }

// A raw QP's object `number` on the device, with the destroy-by-number command that gives it
// back (they share the header and the number's place).
template <class In, class Out, class F>
DeviceObject Owned(Device& device, uint16_t opcode, F field, uint32_t number) {
  prm::Message<In> in;
  in.set(In::opcode, opcode).set(field, number);
  return DeviceObject::Owning<Out>(device.commander(), number, in);
}

DeviceObject TdOnDevice(Device& device, uint32_t td) {
  return Owned<prm::dealloc_transport_domain_in, prm::dealloc_transport_domain_out>(
      device, prm::DEALLOC_TRANSPORT_DOMAIN, prm::dealloc_transport_domain_in::transport_domain, td);
}
DeviceObject TisOnDevice(Device& device, uint32_t tisn) {
  return Owned<prm::destroy_tis_in, prm::destroy_tis_out>(device, prm::DESTROY_TIS,
                                                          prm::destroy_tis_in::tisn, tisn);
}
DeviceObject SqOnDevice(Device& device, uint32_t sqn) {
  return Owned<prm::destroy_sq_in, prm::destroy_sq_out>(device, prm::DESTROY_SQ,
                                                        prm::destroy_sq_in::sqn, sqn);
}
DeviceObject RqOnDevice(Device& device, uint32_t rqn) {
  return Owned<prm::destroy_rq_in, prm::destroy_rq_out>(device, prm::DESTROY_RQ,
                                                        prm::destroy_rq_in::rqn, rqn);
}
DeviceObject TirOnDevice(Device& device, uint32_t tirn) {
  return Owned<prm::destroy_tir_in, prm::destroy_tir_out>(device, prm::DESTROY_TIR,
                                                          prm::destroy_tir_in::tirn, tirn);
}

Result<DeviceObject> AllocTd(Device& device) {
  prm::Message<prm::alloc_transport_domain_in> in;
  in.set(prm::alloc_transport_domain_in::opcode, prm::ALLOC_TRANSPORT_DOMAIN);
  ONCHIP_TRY(auto out, cmd::Run<prm::alloc_transport_domain_out>(device.commander(), in));
  return TdOnDevice(device,
                    static_cast<uint32_t>(out.get(prm::alloc_transport_domain_out::transport_domain)));
}

Result<DeviceObject> CreateTis(Device& device, uint32_t td) {
  using In = prm::create_tis_in;
  prm::Message<In> in;
  in.set(In::opcode, prm::CREATE_TIS).set(prm::tisc_bits<In::ctx.bit_offset>::transport_domain, td);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_tis_out>(device.commander(), in));
  return TisOnDevice(device, static_cast<uint32_t>(out.get(prm::create_tis_out::tisn)));
}

Result<DeviceObject> CreateSq(Device& device, const RawQpRings& r, uint32_t tisn) {
  using In = prm::create_sq_in;
  using C = prm::sqc_bits<In::ctx.bit_offset>;
  using W = prm::wq_bits<C::wq.bit_offset>;
  const uint64_t bytes = uint64_t{r.sq_wqebb_count} << kSendWqeBbLog;
  prm::Message<In> in(PageCount(bytes) * 8);
  in.set(In::opcode, prm::CREATE_SQ)
      .set(C::flush_in_error_en, 1)
      .set(C::state, prm::SQC_STATE_RST)
      .set(C::cqn, r.send_cqn)
      .set(C::tis_lst_sz, 1)
      .set(C::tis_num_0, tisn)
      .set(W::wq_type, prm::WQ_TYPE_CYCLIC)
      .set(W::pd, r.pdn)
      .set(W::uar_page, r.uar_index)
      .set(W::dbr_addr, r.dbr_iova)
      .set(W::log_wq_stride, kSendWqeBbLog)
      .set(W::log_wq_pg_sz, 0)  // 4 KiB pages
      .set(W::log_wq_sz, Log2(r.sq_wqebb_count));
  SetPages(in, r.sq_iova, bytes);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_sq_out>(device.commander(), in));
  return SqOnDevice(device, static_cast<uint32_t>(out.get(prm::create_sq_out::sqn)));
}

Result<DeviceObject> CreateRq(Device& device, const RawQpRings& r) {
  using In = prm::create_rq_in;
  using C = prm::rqc_bits<In::ctx.bit_offset>;
  using W = prm::wq_bits<C::wq.bit_offset>;
  const uint64_t bytes = uint64_t{r.rq_wqe_count} << r.rq_log_stride;
  prm::Message<In> in(PageCount(bytes) * 8);
  // vsd: no VLAN stripping (this device strips none and advertises no CVLAN stripping).
  in.set(In::opcode, prm::CREATE_RQ)
      .set(C::vsd, 1)
      .set(C::mem_rq_type, prm::RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE)
      .set(C::state, prm::RQC_STATE_RST)
      .set(C::flush_in_error_en, 1)
      .set(C::cqn, r.recv_cqn)
      .set(W::wq_type, prm::WQ_TYPE_CYCLIC)
      .set(W::pd, r.pdn)
      .set(W::dbr_addr, r.dbr_iova)
      .set(W::log_wq_stride, r.rq_log_stride)
      .set(W::log_wq_pg_sz, 0)
      .set(W::log_wq_sz, Log2(r.rq_wqe_count));
  SetPages(in, r.rq_iova, bytes);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_rq_out>(device.commander(), in));
  return RqOnDevice(device, static_cast<uint32_t>(out.get(prm::create_rq_out::rqn)));
}

Result<DeviceObject> CreateTir(Device& device, uint32_t td, uint32_t rqn, bool block_mcast) {
  using In = prm::create_tir_in;
  using C = prm::tirc_bits<In::ctx.bit_offset>;
  prm::Message<In> in;
  in.set(In::opcode, prm::CREATE_TIR)
      .set(C::disp_type, prm::TIRC_DISP_TYPE_DIRECT)
      .set(C::inline_rqn, rqn)
      .set(C::transport_domain, td);
  if (block_mcast) in.set(C::self_lb_block, kSelfLbBlockMulticast);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_tir_out>(device.commander(), in));
  return TirOnDevice(device, static_cast<uint32_t>(out.get(prm::create_tir_out::tirn)));
}

// Destroys the object `number` names unless it is 0 (not made, or destroyed already); a
// destroyed object's number becomes 0, so a failed destroy can be retried.
Result<void> DestroyNumbered(Device& device, DeviceObject (*owned)(Device&, uint32_t),
                             uint32_t& number) {
  if (number == 0) return {};
  ONCHIP_CHECK(owned(device, number).Destroy());
  number = 0;
  return {};
}

Result<void> ModifySq(Device& device, RawQpObjects& o, uint8_t next) {
  using In = prm::modify_sq_in;
  prm::Message<In> in;
  in.set(In::opcode, prm::MODIFY_SQ)
      .set(In::sqn, o.sqn)
      .set(In::sq_state, o.sq_state)
      .set(prm::sqc_bits<In::ctx.bit_offset>::state, next);
  ONCHIP_TRY(auto out, cmd::Run<prm::modify_sq_out>(device.commander(), in));
  (void)out;
  o.sq_state = next;
  return {};
}

Result<void> ModifyRq(Device& device, RawQpObjects& o, uint8_t next) {
  using In = prm::modify_rq_in;
  prm::Message<In> in;
  in.set(In::opcode, prm::MODIFY_RQ)
      .set(In::rqn, o.rqn)
      .set(In::rq_state, o.rq_state)
      .set(prm::rqc_bits<In::ctx.bit_offset>::state, next);
  ONCHIP_TRY(auto out, cmd::Run<prm::modify_rq_out>(device.commander(), in));
  (void)out;
  o.rq_state = next;
  return {};
}

}  // namespace

void RawQpOnDevice::Commit() {
  tir.Commit();
  rq.Commit();
  sq.Commit();
  tis.Commit();
  td.Commit();
}

Result<RawQpOnDevice> CreateRawQpObjects(Device& device, const RawQpRings& rings) {
  // What is made is owned as it is made: a failure gives it back, last made first.
  RawQpOnDevice made;
  RawQpObjects& o = made.numbers;
  o.has_sq = rings.sq_wqebb_count != 0;
  o.has_rq = rings.rq_wqe_count != 0;
  ONCHIP_TRY(made.td, AllocTd(device));
  o.td = made.td.id();
  if (o.has_sq) {
    ONCHIP_TRY(made.tis, CreateTis(device, o.td));
    o.tisn = made.tis.id();
    ONCHIP_TRY(made.sq, CreateSq(device, rings, o.tisn));
    o.sqn = made.sq.id();
  }
  if (o.has_rq) {
    ONCHIP_TRY(made.rq, CreateRq(device, rings));
    o.rqn = made.rq.id();
    ONCHIP_TRY(made.tir, CreateTir(device, o.td, o.rqn, rings.block_self_mcast_loopback));
    o.tirn = made.tir.id();
  }
  return made;
}

Result<void> DestroyRawQpObjects(Device& device, RawQpObjects& o) {
  ONCHIP_CHECK(DestroyNumbered(device, TirOnDevice, o.tirn));
  ONCHIP_CHECK(DestroyNumbered(device, RqOnDevice, o.rqn));
  ONCHIP_CHECK(DestroyNumbered(device, SqOnDevice, o.sqn));
  ONCHIP_CHECK(DestroyNumbered(device, TisOnDevice, o.tisn));
  ONCHIP_CHECK(DestroyNumbered(device, TdOnDevice, o.td));
  return {};
}

bool RawModifyIsOk(ibv_qp_state cur, ibv_qp_state next, int mask) {
  if (cur > IBV_QPS_ERR || next > IBV_QPS_ERR) return false;
  int required = 0, optional = 0;
  if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
    // From any state, with no attribute.
  } else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
    required = IBV_QP_PORT;
  } else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) {
    optional = IBV_QP_PORT;
  } else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
  } else if ((cur == IBV_QPS_RTR || cur == IBV_QPS_RTS) && next == IBV_QPS_RTS) {
    optional = IBV_QP_RATE_LIMIT;
  } else {
    return false;
  }
  if ((mask & required) != required) return false;
  return (mask & ~(IBV_QP_STATE | required | optional)) == 0;
}

Result<void> ModifyRawQp(Device& device, RawQpObjects& o, uint16_t opcode) {
  switch (opcode) {
    case prm::RST2INIT_QP:
      if (o.has_rq) ONCHIP_CHECK(ModifyRq(device, o, prm::RQC_STATE_RDY));
      if (o.has_sq) ONCHIP_CHECK(ModifySq(device, o, prm::SQC_STATE_RST));
      return {};
    case prm::INIT2INIT_QP:
    case prm::INIT2RTR_QP:
      return {};
    case prm::RTR2RTS_QP:
    case prm::RTS2RTS_QP:
      if (o.has_sq) ONCHIP_CHECK(ModifySq(device, o, prm::SQC_STATE_RDY));
      return {};
    case prm::QP_2ERR:
      if (o.has_rq) ONCHIP_CHECK(ModifyRq(device, o, prm::RQC_STATE_ERR));
      if (o.has_sq) ONCHIP_CHECK(ModifySq(device, o, prm::SQC_STATE_ERR));
      return {};
    case prm::QP_2RST:
      if (o.has_rq) ONCHIP_CHECK(ModifyRq(device, o, prm::RQC_STATE_RST));
      if (o.has_sq) ONCHIP_CHECK(ModifySq(device, o, prm::SQC_STATE_RST));
      return {};
    default:
      return Fail(EINVAL, "modify_qp: a raw packet QP has no such transition");
  }
}

Result<ibv_qp_state> QueryRawQpState(Device& device, const RawQpObjects& o,
                                     ibv_qp_state recorded) {
  constexpr int kNone = -1;
  int sq = kNone, rq = kNone;
  if (o.has_sq) {
    prm::Message<prm::query_sq_in> in;
    in.set(prm::query_sq_in::opcode, prm::QUERY_SQ).set(prm::query_sq_in::sqn, o.sqn);
    ONCHIP_TRY(auto out, cmd::Run<prm::query_sq_out>(device.commander(), in));
    sq = static_cast<int>(out.get(prm::sqc_bits<prm::query_sq_out::sq_context.bit_offset>::state));
  }
  if (o.has_rq) {
    prm::Message<prm::query_rq_in> in;
    in.set(prm::query_rq_in::opcode, prm::QUERY_RQ).set(prm::query_rq_in::rqn, o.rqn);
    ONCHIP_TRY(auto out, cmd::Run<prm::query_rq_out>(device.commander(), in));
    rq = static_cast<int>(out.get(prm::rqc_bits<prm::query_rq_out::rq_context.bit_offset>::state));
  }
  const auto bad = [] { return Fail(EINVAL, "query_qp: the raw QP's SQ and RQ states disagree"); };
  switch (rq) {
    case prm::RQC_STATE_RST:
      if (sq == kNone || sq == prm::SQC_STATE_RST) return IBV_QPS_RESET;
      return bad();
    case prm::RQC_STATE_RDY:
      if (sq == prm::SQC_STATE_ERR) return IBV_QPS_SQE;
      return recorded;
    case prm::RQC_STATE_ERR:
      if (sq == kNone || sq == prm::SQC_STATE_ERR) return IBV_QPS_ERR;
      return bad();
    case kNone:
      if (sq == prm::SQC_STATE_RST) return IBV_QPS_RESET;
      if (sq == prm::SQC_STATE_ERR) return IBV_QPS_ERR;
      return recorded;
    default:
      return bad();
  }
}

}  // namespace onchip::driver
