// The objects a raw packet QP is built of, as the firmware creates them (firmware_eth_queues.cc):
// send queues (SQ) and receive queues (RQ), whose numbers come from the QP numbers, the
// transport interface send object (TIS) every SQ names, and the transport interface receive
// object (TIR) that dispatches received frames to one RQ.
//
// A work queue is a cyclic ring in host pages the driver lists in pas[] (bus addresses, pages of
// 2^log_page_bytes bytes): 2^log_wq_sz WQEs of 2^log_wq_stride bytes, and a doorbell record at
// dbr_addr whose word 0 is the receive counter (RQ) and word 1 the send counter (SQ), as a QP's.
// The context bytes are what the driver sent; `state` is the current one (context state mirrors
// it). References: an SQ holds its CQ, PD and TIS; an RQ its CQ and PD; a TIS and a TIR their
// transport domain; a TIR its RQ. The referenced object refuses to go (RES_BUSY) meanwhile.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "uapi/prm/wq.h"

namespace onchip::sim {

struct WorkQueue {
  uint16_t uid;
  uint32_t pd;
  uint32_t cqn;
  uint8_t state;  // prm::SQC_STATE_* / prm::RQC_STATE_* (same values)
  std::vector<uint64_t> pas;
  uint32_t log_page_bytes;  // 12 + wq.log_wq_pg_sz
  uint64_t dbr_addr;
  uint32_t wqe_count;  // 2^log_wq_sz
  uint32_t stride;     // 2^log_wq_stride bytes
};

struct Sq : WorkQueue {
  uint32_t tisn;
  uint32_t uar_page;
  std::array<std::byte, prm::size_bytes<prm::sqc>> sqc;
};

struct Rq : WorkQueue {
  std::array<std::byte, prm::size_bytes<prm::rqc>> rqc;
  uint32_t tirs = 0;  // live TIRs dispatching to it: DESTROY_RQ is RES_BUSY while non-zero
};

struct Tis {
  uint16_t uid;
  uint32_t td;
  std::array<std::byte, prm::size_bytes<prm::tisc>> tisc;
  uint32_t sqs = 0;  // live SQs sending through it: DESTROY_TIS is RES_BUSY while non-zero
};

struct Tir {
  uint16_t uid;
  uint32_t td;
  uint32_t rqn;  // direct dispatch: every frame the TIR receives goes to this RQ
  std::array<std::byte, prm::size_bytes<prm::tirc>> tirc;
};

}  // namespace onchip::sim
