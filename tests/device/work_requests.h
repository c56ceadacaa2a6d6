// Work requests as the device tests post them: one scatter-gather entry each, built by what the
// request does and posted through the provider's data path, the post's errno returned.
//
//   ASSERT_EQ(Post(b, Recv(7, Local(4096, 64))), 0);
//   ASSERT_EQ(Post(a, RdmaWrite(10, Local(0, 64), Remote(6000)).Signaled()), 0);
//   ASSERT_EQ(Post(send, Send(9, Local(0, 64)).ToXrcSrq(srqn)), 0);
//
// A request is a value: its sg_list is pointed at its own entry only when it is posted, so a
// builder's result may be copied, kept and posted again. Send flags are the call site's: a
// request starts with none, as a zeroed ibv_send_wr does.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "driver/rings/data_path.h"

namespace onchip::testing {

// Where a one-sided request lands: an address the responder's key covers.
struct RemoteBuffer {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

// A send queue work request over one local scatter-gather entry.
struct SendRequest {
  ibv_send_wr wr{};  // sg_list and num_sge are set by Post
  ibv_sge sge{};

  SendRequest Signaled() const {
    SendRequest r = *this;
    r.wr.send_flags |= IBV_SEND_SIGNALED;
    return r;
  }
  // An XRC send QP's request names the receive side's XRC SRQ.
  SendRequest ToXrcSrq(uint32_t srqn) const {
    SendRequest r = *this;
    r.wr.qp_type.xrc.remote_srqn = srqn;
    return r;
  }
};

// A receive queue (or SRQ) work request over one scatter-gather entry.
struct RecvRequest {
  ibv_recv_wr wr{};  // sg_list and num_sge are set by Post
  ibv_sge sge{};
};

inline SendRequest Send(uint64_t wr_id, ibv_sge local) {
  SendRequest r;
  r.wr.wr_id = wr_id;
  r.wr.opcode = IBV_WR_SEND;
  r.sge = local;
  return r;
}

// A datagram to `remote_qpn` through `ah`, carrying `remote_qkey`.
inline SendRequest UdSend(uint64_t wr_id, ibv_sge local, ibv_ah* ah, uint32_t remote_qpn,
                          uint32_t remote_qkey) {
  SendRequest r = Send(wr_id, local);
  r.wr.wr.ud.ah = ah;
  r.wr.wr.ud.remote_qpn = remote_qpn;
  r.wr.wr.ud.remote_qkey = remote_qkey;
  return r;
}

inline SendRequest RdmaWrite(uint64_t wr_id, ibv_sge local, RemoteBuffer remote) {
  SendRequest r;
  r.wr.wr_id = wr_id;
  r.wr.opcode = IBV_WR_RDMA_WRITE;
  r.wr.wr.rdma.remote_addr = remote.addr;
  r.wr.wr.rdma.rkey = remote.rkey;
  r.sge = local;
  return r;
}

// `local` receives what `remote` holds.
inline SendRequest RdmaRead(uint64_t wr_id, ibv_sge local, RemoteBuffer remote) {
  SendRequest r = RdmaWrite(wr_id, local, remote);
  r.wr.opcode = IBV_WR_RDMA_READ;
  return r;
}

// Adds `add` to the 8 bytes at `remote`; `local` receives the value before.
inline SendRequest FetchAdd(uint64_t wr_id, ibv_sge local, RemoteBuffer remote, uint64_t add) {
  SendRequest r;
  r.wr.wr_id = wr_id;
  r.wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  r.wr.wr.atomic.remote_addr = remote.addr;
  r.wr.wr.atomic.rkey = remote.rkey;
  r.wr.wr.atomic.compare_add = add;
  r.sge = local;
  return r;
}

// Writes `swap` to the 8 bytes at `remote` if they hold `compare`; `local` receives the value
// before.
inline SendRequest CmpSwap(uint64_t wr_id, ibv_sge local, RemoteBuffer remote, uint64_t compare,
                           uint64_t swap) {
  SendRequest r = FetchAdd(wr_id, local, remote, compare);
  r.wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  r.wr.wr.atomic.swap = swap;
  return r;
}

inline RecvRequest Recv(uint64_t wr_id, ibv_sge local) {
  RecvRequest r;
  r.wr.wr_id = wr_id;
  r.sge = local;
  return r;
}

// ibv_post_send of the one request: 0 or the errno.
inline int Post(ibv_qp* qp, SendRequest r) {
  r.wr.sg_list = &r.sge;
  r.wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  return driver::rings::PostSend(qp, &r.wr, &bad);
}

// ibv_post_recv of the one request: 0 or the errno.
inline int Post(ibv_qp* qp, RecvRequest r) {
  r.wr.sg_list = &r.sge;
  r.wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return driver::rings::PostRecv(qp, &r.wr, &bad);
}

// ibv_post_srq_recv of the one request: 0 or the errno.
inline int Post(ibv_srq* srq, RecvRequest r) {
  r.wr.sg_list = &r.sge;
  r.wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return driver::rings::PostSrqRecv(srq, &r.wr, &bad);
}

}  // namespace onchip::testing
