// The device objects behind a raw packet QP (IBV_QPT_RAW_PACKET), as mlx5_ib builds them: no
// QP context at all, but an Ethernet send queue (SQ) that sends through a transport interface
// send object (TIS), a receive queue (RQ), and a transport interface receive object (TIR) that
// dispatches received frames to that RQ. TIS and TIR live in a transport domain; mlx5_ib uses
// one per user context, onchip gives each raw QP its own (allocated first, freed last), which
// only narrows which QPs count as "self" for loopback blocking.
//
// The QP's number is the SQ's when it has one, else the RQ's (mlx5_ib reports it so); both
// come from the device's QP numbers. Verbs transitions map onto the queues' states as mlx5_ib
// maps them: RESET->INIT readies the RQ, RTR->RTS (and RTS->RTS) readies the SQ, INIT->INIT and
// INIT->RTR change nothing on the device, ->ERR and ->RESET move both. ibv_query_qp derives the
// state from the two queues' states (QUERY_SQ / QUERY_RQ), as mlx5_ib does.
//
// driver/qp.cc calls these from CreateQp / ModifyQp / QueryQp / destroy; they issue the
// commands and keep the objects' numbers and states, nothing else.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "driver/device.h"
#include "driver/device_object.h"
#include "uapi/result.h"

namespace onchip::driver {

struct RawQpObjects {
  uint32_t td = 0;  // 0: not (or no longer) allocated; likewise for the numbers below
  uint32_t tisn = 0;
  uint32_t sqn = 0;
  uint32_t rqn = 0;
  uint32_t tirn = 0;
  uint8_t sq_state = 0;  // prm::SQC_STATE_*, as the driver last set it
  uint8_t rq_state = 0;  // prm::RQC_STATE_*
  bool has_sq = false;
  bool has_rq = false;
  uint32_t qpn() const { return has_sq ? sqn : rqn; }
};

// What CREATE_SQ / CREATE_RQ need: the rings the driver allocated and the objects they name.
struct RawQpRings {
  uint32_t pdn = 0;
  uint32_t uar_index = 0;  // the SQ's doorbell UAR
  uint64_t dbr_iova = 0;   // the QP's doorbell record: receive counter word 0, send counter word 1
  uint32_t send_cqn = 0;
  uint32_t recv_cqn = 0;
  uint32_t sq_wqebb_count = 0;  // 0: no SQ
  uint64_t sq_iova = 0;         // page-aligned, 4 KiB pages
  uint32_t rq_wqe_count = 0;    // 0: no RQ
  uint32_t rq_log_stride = 0;
  uint64_t rq_iova = 0;
  bool block_self_mcast_loopback = false;
};

// What CreateRawQpObjects made: the numbers, and the objects owned until the QP is published
// (a RawQpOnDevice destroyed before Commit() gives them back: TIR, RQ, SQ, TIS, then the
// transport domain, the members' reverse order).
struct RawQpOnDevice {
  RawQpObjects numbers;
  DeviceObject td, tis, sq, rq, tir;
  // Published: the QP's release (DestroyRawQpObjects) destroys them from here on.
  void Commit();
};

// The transport domain, then TIS and SQ, then RQ and TIR; a failure leaves nothing made.
Result<RawQpOnDevice> CreateRawQpObjects(Device& device, const RawQpRings& rings);
// TIR, RQ, SQ, TIS, then the transport domain (mlx5_ib's order). Each destroyed object's number
// is cleared, so a failed destroy can be retried.
Result<void> DestroyRawQpObjects(Device& device, RawQpObjects& objects);

// ib_modify_qp_is_ok for RAW_PACKET: RESET->INIT needs IBV_QP_PORT, INIT->INIT may carry it,
// RTR->RTS and RTS->RTS may carry IBV_QP_RATE_LIMIT; nothing else but IBV_QP_STATE.
bool RawModifyIsOk(ibv_qp_state cur, ibv_qp_state next, int mask);
// Moves the SQ and RQ for the verbs transition cur -> next (`opcode`, the QP transition command
// mlx5 would run: RST2INIT_QP, ..., QP_2RST).
Result<void> ModifyRawQp(Device& device, RawQpObjects& objects, uint16_t opcode);
// The QP state the queues' device states mean; `recorded` is the last state the verbs set.
// EINVAL when the two states contradict each other.
Result<ibv_qp_state> QueryRawQpState(Device& device, const RawQpObjects& objects,
                                     ibv_qp_state recorded);

}  // namespace onchip::driver
