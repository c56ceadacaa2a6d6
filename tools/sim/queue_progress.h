// What the data engine keeps per queue while it runs it: the counters it has consumed and
// produced up to and the work it has in flight. They live in the engine's own store
// (engine_state.h), not in the contexts: the firmware starts them zeroed when it creates a queue
// and again when a QP returns to reset (QP_2RST), and otherwise only reads them for its queries
// (and counts the resize CQE it writes: EngineStateControl, engine_state_control.h).
//
// The doorbell-record words the engine reads every pass keep their translation through the
// IOMMU (Iommu::CachedTranslation), as a NIC keeps a queue's context and its addresses cached:
// the lookup runs again only after an unmap.
#pragma once

#include <cstdint>

#include "tools/sim/iommu.h"

namespace onchip::sim {

struct CqProgress {
  uint32_t consumer_counter = 0;  // the doorbell record's consumer index as last read
  uint32_t producer_counter = 0;  // CQEs written
  uint32_t arm_word = 0;      // the doorbell record's arm word as last seen
  bool armed = false;         // an event is due for the next (solicited) completion
  bool solicited_only = false;
  bool overflowed = false;    // a CQE found no room: the CQ is in error and writes nothing
  // Moderation of the armed CQ's event (cqc.cq_max_count, cqc.cq_period): the completions that
  // asked for it so far, and when the period started by the first of them ends (0: none running).
  uint32_t moderated = 0;
  uint64_t moderation_deadline_ns = 0;
  Iommu::CachedTranslation arm_dbr;  // the doorbell record's arm word
  Iommu::CachedTranslation ci_dbr;   // and its consumer index
  Iommu::CachedTranslation ring_page;  // the page the last CQE went to
};

struct QpProgress {
  uint32_t sq_wqe_counter = 0;  // 16-bit wqe_counter of the next send WQE to execute
  uint32_t rq_counter = 0;      // receive WQEs consumed
  bool comm_established = false;  // a request arrived in RTR: COMM_EST raised once
  bool last_wqe_reached = false;  // in ERR on an SRQ, nothing more taken from it: raised once

  // Requester (RC): the WQE at sq_wqe_counter has been sent and waits for its response.
  bool awaiting = false;
  bool rnr_wait = false;        // resend_at_ns is the end of an RNR wait, not an ACK timeout
  uint8_t wqe_opcode = 0;       // of the WQE in flight
  uint8_t wqe_bbs = 0;          // its size in basic blocks
  bool wqe_signaled = false;    // it asked for a CQE
  uint32_t wqe_bytes = 0;       // its message length
  bool retries_loaded = false;  // rnr_left / retry_left hold this WQE's budget
  uint8_t rnr_left = 0;         // rnr_retry left (7: unlimited)
  uint8_t retry_left = 0;       // retry_count left
  uint64_t resend_at_ns = 0;    // device time to send it again (RNR wait or ACK timeout); 0: none
  uint32_t send_msn = 0;        // messages completed: psn = qpc.next_send_psn + send_msn

  // Responder: messages executed (expected psn = qpc.next_rcv_psn + recv_msn) and the result
  // of the last atomic, returned again if its request is repeated.
  uint32_t recv_msn = 0;
  uint64_t last_atomic_original = 0;

  // Counters QUERY_QP may report.
  uint64_t requests_sent = 0;
  uint64_t requests_executed = 0;

  Iommu::CachedTranslation sq_dbr;  // the doorbell record's send counter
  Iommu::CachedTranslation rq_dbr;  // and its receive counter
  Iommu::CachedTranslation sq_page;  // the ring page the last send WQE came from
  Iommu::CachedTranslation gather_page;  // the MTT page the last gathered bytes came from
  Iommu::CachedTranslation rq_page;  // and the last receive WQE
};

struct EqProgress {
  uint32_t consumer_counter = 0;  // what the last EQ doorbell reported
  uint32_t producer_counter = 0;  // EQEs written
};

struct SrqProgress {
  uint32_t head = 0;     // the WQE index the free list continues at (the chain starts at 0)
  uint32_t counter = 0;  // WQEs consumed (16 bits compared with the doorbell record)
  Iommu::CachedTranslation dbr;  // the doorbell record's receive counter
  Iommu::CachedTranslation ring_page;  // the ring page the last WQE came from
};

}  // namespace onchip::sim
