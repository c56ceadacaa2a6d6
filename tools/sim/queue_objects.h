// The software ConnectX's queue objects as the firmware creates them and the data engine runs
// them: event queues, completion queues, queue pairs and shared receive queues.
//
// They live in the device's context memory (tools/sim/contexts.h). The firmware writes every
// field below when it executes a command: the context bytes are what the driver sent, merged
// with what each later command changed (MODIFY_CQ, every QP transition), so the engine reads
// its parameters from them with the PRM accessors (prm::Get(ctx, prm::qpc::remote_qpn)). The
// engine sees the objects const (ContextsView, contexts_view.h). What it keeps while it runs a
// queue (what it has consumed, produced and has in flight: the CQ and EQ producer and consumer
// counters among it) is its own, in its store by queue number (engine_state.h).
//
// Rings live in host memory the driver listed in pas[] (bus addresses, each page
// 2^log_page_bytes bytes); byte i of a ring is at pas[i >> log_page_bytes] + (i & page mask).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"

namespace onchip::sim {

// An event queue: the context the driver sent (its st field holds the arm state), the page
// list and the event mask.
struct Eq {
  uint16_t uid;
  std::array<std::byte, prm::size_bytes<prm::eqc>> eqc;
  std::array<uint64_t, 4> event_bitmask;
  std::vector<uint64_t> pas;
  uint32_t log_page_bytes;        // 12 + eqc.log_page_size
  uint32_t cqs = 0;               // live CQs reporting to it
};

// A completion queue: context, page list, doorbell record (consumer index word, arm word) and
// its EQ.
struct Cq {
  uint16_t uid;
  std::array<std::byte, prm::size_bytes<prm::cqc>> cqc;
  std::vector<uint64_t> pas;
  uint32_t log_page_bytes;  // 12 + cqc.log_page_size
  // cqc.log_cq_size and the CQE size cqc.cqe_sz says (64 or 128 bytes), which the data engine
  // needs for every CQE: set where the context gets them, CREATE_CQ and a resize.
  uint32_t log_size;
  uint32_t cqe_bytes;
  uint32_t eqn;
  uint64_t dbr_addr;
  uint32_t users = 0;  // live QPs and SRQs naming it: DESTROY_CQ is RES_BUSY while non-zero
};

// A queue pair. The buffer holds the receive ring first (rq_wqe_count WQEs of rq_stride bytes;
// none with an SRQ or log_rq_size 0 and no RQ) and the send ring after it, at sq_offset
// (sq_wqebb_count 64-byte basic blocks). The doorbell record at dbr_addr holds the receive
// counter (word 0) and the send counter (word 1), big-endian.
struct Qp {
  uint16_t uid;
  uint32_t pd;
  uint8_t st;           // qpc.st: prm transport service type (RC, UC, UD, ...)
  prm::QpState state = prm::QP_STATE_RST;
  std::array<std::byte, prm::size_bytes<prm::qpc>> qpc;  // qpc.state mirrors `state`
  std::vector<uint64_t> pas;
  uint32_t log_page_bytes;  // 12 + qpc.log_page_size
  uint64_t dbr_addr;
  uint32_t uar_page;
  uint32_t cqn_snd;
  uint32_t cqn_rcv;
  // The CQs those name, so that a completion needs no table lookup. A QP holds its CQs
  // (DESTROY_CQ is RES_BUSY while it lives), so they stay in place: CREATE_QP sets both, and the
  // transition that changes cqn_rcv changes cq_rcv with it. Null for an XRC target (no CQs).
  const Cq* cq_snd = nullptr;
  const Cq* cq_rcv = nullptr;
  std::optional<uint32_t> srqn;  // rq_type SRQ: the SRQ its receives come from
  // st XRC: the XRC domain it holds. The receive side (xrc_tgt: no_sq) has no rings, PD or CQs
  // of its own: each request names an XRC SRQ of its domain, whose PD, WQEs and CQ it uses.
  std::optional<uint32_t> xrcd;
  bool xrc_tgt = false;
  uint32_t rq_wqe_count = 0;     // 0: no receive ring in the buffer
  uint32_t rq_stride = 0;        // bytes per receive WQE
  uint32_t sq_wqebb_count = 0;   // 0: no send ring (no_sq)
  uint64_t sq_offset = 0;        // byte offset of the send ring in the buffer
};

// A shared receive queue: a ring of wqe_count WQEs of stride bytes, each starting with the
// next-segment (mlx5_wqe_srq_next_seg) that links the free list, and a doorbell record whose
// word 0 is the receive counter.
struct Srq {
  uint16_t uid;
  uint32_t pd;
  std::array<std::byte, 0x40> srqc;  // srq_context_entry as sent, lwm as last armed
  std::vector<uint64_t> pas;
  uint32_t log_page_bytes;
  uint64_t dbr_addr;
  std::optional<uint32_t> xrcd;  // XRC SRQs (CREATE_XRC_SRQ): the domain it belongs to
  uint32_t cqn = 0;        // XRC SRQs only: where its receives complete; 0 otherwise
  uint32_t user_index = 0;  // XRC SRQs: the CQE's srqn_uidx for its receives (CQE version 1)
  uint32_t wqe_count = 0;  // 2^log_srq_size
  uint32_t stride = 0;     // bytes per WQE: 16 << log_rq_stride
  uint32_t users = 0;      // live QPs receiving from it: DESTROY_SRQ is RES_BUSY while non-zero
};

}  // namespace onchip::sim
