// The steps CREATE_SRQ (firmware_srq.cc) and CREATE_XRC_SRQ (firmware_xrc_srq.cc) share once
// each has read its own context layout (srqc, xrc_srqc) and checked its ring
// (srq_queue_checks.h): the PD, the doorbell record, the ring's pages and the SRQ number, checked
// in one place so that the two kinds refuse alike, in the same order and with the same syndromes.
#include <cstring>
#include <utility>

#include "tools/sim/firmware.h"
#include "tools/sim/srq_queue_checks.h"

namespace onchip::sim {


namespace {

constexpr uint32_t kDbrAlignment = 4;  // xrc_srqc's db_record_addr_l is so by format
constexpr uint32_t kDbrBytes = 4;      // the post counter


}  // namespace

Outcome Firmware::CreateSrqFromContext(std::span<const std::byte> in, const SrqContext& context,
                                       const SrqRing& ring,
                                       const std::function<Outcome(Srq&)>& check_named,
                                       uint32_t* srqn) {
  auto pd = pds_.find(context.pdn);
  if (pd == pds_.end()) return Refuse(Syndrome::SRQ_PD_UNKNOWN);
  if (pd->second.uid != context.uid) return Refuse(Syndrome::NOT_OWNER);

  Srq srq{};
  srq.uid = context.uid;
  srq.pd = context.pdn;
  if (check_named) {
    if (Outcome s = check_named(srq); !s.ok()) return s;
  }

  if (context.dbr_addr % kDbrAlignment != 0) return Refuse(Syndrome::SRQ_DBR_ALIGNMENT);
  if (!iommu_.IsMappedFor(context.uid, context.dbr_addr, kDbrBytes))
    return Refuse(Syndrome::SRQ_DBR_UNMAPPED);

  srq.log_page_bytes = 12 + ring.log_page_size;
  srq.dbr_addr = context.dbr_addr;
  srq.wqe_count = uint32_t{1} << ring.log_size;
  srq.stride = uint32_t{1} << ring.log_stride;
  constexpr PasSyndromes kPasSyndromes{
      .count = Syndrome::SRQ_PAS_COUNT,
      .entry = Syndrome::SRQ_PAS_ENTRY,
      .unmapped = Syndrome::SRQ_PAS_UNMAPPED,
  };
  const uint32_t log_ring_bytes = ring.log_size + ring.log_stride;
  if (Outcome s = ReadQueuePages(in, context.pas_offset, log_ring_bytes, srq.log_page_bytes,
                                 kPasSyndromes, &srq.pas);
      !s.ok())
    return s;

  auto n = srq_ids_.Allocate();
  if (!n) return Refuse(Syndrome::SRQ_EXHAUSTED);
  std::memcpy(srq.srqc.data(), context.srqc.data(), srq.srqc.size());
  ++pd->second.queues;
  srqs_.emplace(*n, std::move(srq));
  engine_.StartSrq(*n);
  *srqn = *n;
  return Outcome::Ok();
}

}  // namespace onchip::sim
