// The queue checks CREATE_SRQ and CREATE_XRC_SRQ share. srqc and xrc_srqc carry the same ring
// fields (only the size is named apart: log_srq_size, log_xrc_srq_size), and firmware checks
// them alike: the state and WQE count are the device's (a new SRQ is GOOD and holds nothing),
// the size within log_max_srq_sz, the stride within max_wqe_sz_rq, the limit below the ring
// size, the page size and offset the device takes. The steps after these (PD, doorbell record,
// pages, number) are Firmware::CreateSrqFromContext's (firmware_srq_create.cc).
#pragma once

#include <cstdint>
#include <span>

#include "tools/sim/config.h"
#include "tools/sim/outcome.h"
#include "uapi/prm/srq.h"
#include "uapi/sim/syndrome.h"

namespace onchip::sim {

// What a good SRQ context says of its ring.
struct SrqRing {
  uint32_t log_size = 0;
  uint32_t log_stride = 0;  // bytes per WQE: 16 << log_rq_stride
  uint32_t log_page_size = 0;
};

// `Ctx` is the context's field set in the command (prm::srqc_bits / prm::xrc_srqc_bits at its
// offset); `log_size` its size field, read by the caller.
// `max_log_page_size` the largest page the device takes (Firmware's queue page limit).
template <class Ctx>
Outcome CheckSrqRing(std::span<const std::byte> in, uint32_t log_size, const DeviceConfig& config,
                     uint32_t max_log_page_size, SrqRing* ring) {
  if (prm::Get(in, Ctx::state) != prm::SRQ_STATE_GOOD || prm::Get(in, Ctx::wqe_cnt) != 0)
    return Refuse(Syndrome::SRQ_STATE);
  if (log_size > config.log_max_srq_sz) return Refuse(Syndrome::SRQ_SIZE);
  const uint32_t log_stride = 4 + static_cast<uint32_t>(prm::Get(in, Ctx::log_rq_stride));
  if ((uint32_t{1} << log_stride) > config.max_wqe_sz_rq) return Refuse(Syndrome::SRQ_STRIDE);
  if (prm::Get(in, Ctx::lwm) >= (uint32_t{1} << log_size)) return Refuse(Syndrome::SRQ_LWM);
  const auto log_page_size = static_cast<uint32_t>(prm::Get(in, Ctx::log_page_size));
  if (log_page_size > max_log_page_size) return Refuse(Syndrome::SRQ_PAGE_SIZE);
  if (prm::Get(in, Ctx::page_offset) != 0) return Refuse(Syndrome::SRQ_PAGE_OFFSET);
  *ring = {.log_size = log_size, .log_stride = log_stride, .log_page_size = log_page_size};
  return Outcome::Ok();
}

}  // namespace onchip::sim
