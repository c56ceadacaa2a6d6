#include "driver/rings/data_path.h"

#include <cerrno>

#include "uapi/prm/send_wqe.h"

namespace onchip::driver::rings {
namespace {

SendQueue& Sq(ibv_qp_ex* qp) { return DataPathQp::From(qp)->sq; }
CqRing& Ring(ibv_cq_ex* cq) { return DataPathCq::From(cq)->ring; }

// ---- ibv_qp_ex ----

void WrStart(ibv_qp_ex* qp) { Sq(qp).WrStart(); }
int WrComplete(ibv_qp_ex* qp) { return Sq(qp).WrComplete(); }
void WrAbort(ibv_qp_ex* qp) { Sq(qp).WrAbort(); }

void WrSend(ibv_qp_ex* qp) { Sq(qp).WrSend(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_SEND, 0); }
void WrSendImm(ibv_qp_ex* qp, __be32 imm) {
  Sq(qp).WrSend(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_SEND_IMM, imm);
}
void WrSendInv(ibv_qp_ex* qp, uint32_t invalidate_rkey) {
  Sq(qp).WrSend(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_SEND_INVAL,
                prm::Be32::FromHost(invalidate_rkey).raw());
}
void WrRdmaWrite(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr) {
  Sq(qp).WrRdma(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_RDMA_WRITE, rkey, remote_addr, 0);
}
void WrRdmaWriteImm(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, __be32 imm) {
  Sq(qp).WrRdma(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_RDMA_WRITE_IMM, rkey, remote_addr, imm);
}
void WrRdmaRead(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr) {
  Sq(qp).WrRdma(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_RDMA_READ, rkey, remote_addr, 0);
}
void WrAtomicCmpSwp(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                    uint64_t swap) {
  Sq(qp).WrAtomic(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_ATOMIC_CS, rkey, remote_addr, swap,
                  compare);
}
void WrAtomicFetchAdd(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
  Sq(qp).WrAtomic(qp->wr_id, qp->wr_flags, prm::MLX5_OPCODE_ATOMIC_FA, rkey, remote_addr, add, 0);
}
void WrBindMw(ibv_qp_ex* qp, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  Sq(qp).WrBindMw(qp->wr_id, qp->wr_flags, mw, rkey, *info);
}
void WrLocalInv(ibv_qp_ex* qp, uint32_t invalidate_rkey) {
  Sq(qp).WrLocalInv(qp->wr_id, qp->wr_flags, invalidate_rkey);
}
void WrSetUdAddr(ibv_qp_ex* qp, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  Sq(qp).WrSetUdAddr(ah, remote_qpn, remote_qkey);
}
void WrSetXrcSrqn(ibv_qp_ex* qp, uint32_t remote_srqn) { Sq(qp).WrSetXrcSrqn(remote_srqn); }
void WrSetSge(ibv_qp_ex* qp, uint32_t lkey, uint64_t addr, uint32_t length) {
  Sq(qp).WrSetSge(lkey, addr, length);
}
void WrSetSgeList(ibv_qp_ex* qp, size_t num_sge, const ibv_sge* sg_list) {
  Sq(qp).WrSetSgeList(num_sge, sg_list);
}
void WrSetInlineData(ibv_qp_ex* qp, void* addr, size_t length) {
  Sq(qp).WrSetInline(addr, length);
}
void WrSetInlineDataList(ibv_qp_ex* qp, size_t num_buf, const ibv_data_buf* buf_list) {
  Sq(qp).WrSetInlineList(num_buf, buf_list);
}

// ---- ibv_cq_ex ----

int StartPoll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  return Ring(cq).StartPoll(cq);
}
int NextPoll(ibv_cq_ex* cq) { return Ring(cq).NextPoll(cq); }
void EndPoll(ibv_cq_ex* cq) { Ring(cq).EndPoll(); }
ibv_wc_opcode ReadOpcode(ibv_cq_ex* cq) { return Ring(cq).current().opcode; }
uint32_t ReadVendorErr(ibv_cq_ex* cq) { return Ring(cq).current().vendor_err; }
uint32_t ReadByteLen(ibv_cq_ex* cq) { return Ring(cq).current().byte_len; }
__be32 ReadImmData(ibv_cq_ex* cq) {
  // After SEND_WITH_INV the field carries the invalidated rkey, in host order.
  const ibv_wc& wc = Ring(cq).current();
  return (wc.wc_flags & IBV_WC_WITH_INV) ? wc.invalidated_rkey : wc.imm_data;
}
uint32_t ReadQpNum(ibv_cq_ex* cq) { return Ring(cq).current().qp_num; }
uint32_t ReadSrcQp(ibv_cq_ex* cq) { return Ring(cq).current().src_qp; }
unsigned ReadWcFlags(ibv_cq_ex* cq) { return Ring(cq).current().wc_flags; }
uint32_t ReadSlid(ibv_cq_ex* cq) { return Ring(cq).current().slid; }
uint8_t ReadSl(ibv_cq_ex* cq) { return Ring(cq).current().sl; }
uint8_t ReadDlidPathBits(ibv_cq_ex* cq) { return Ring(cq).current().dlid_path_bits; }
uint64_t ReadCompletionTs(ibv_cq_ex* cq) { return Ring(cq).current_timestamp(); }

}  // namespace

int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  return DataPathQp::From(qp)->sq.PostSend(wr, bad_wr);
}
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  return DataPathQp::From(qp)->rq.PostRecv(wr, bad_wr);
}
int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  return DataPathSrq::From(srq)->ring.PostRecv(wr, bad_wr);
}
int PollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  return DataPathCq::From(cq)->ring.Poll(num_entries, wc);
}
int ReqNotifyCq(ibv_cq* cq, int solicited_only) {
  return DataPathCq::From(cq)->ring.Arm(solicited_only != 0);
}
void CqEvent(ibv_cq* cq) { DataPathCq::From(cq)->ring.Event(); }

uint64_t SupportedSendOps(QpTransport transport) {
  const uint64_t send = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
  const uint64_t uc = send | IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |
                      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV |
                      IBV_QP_EX_WITH_BIND_MW;
  switch (transport) {
    case QpTransport::kUd: return send;
    case QpTransport::kRaw: return 0;  // the engine executes no Ethernet send queue yet
    case QpTransport::kUc: return uc;
    case QpTransport::kRc:
    case QpTransport::kXrc:
      return uc | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
             IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
  }
  return 0;
}

Result<void> InstallWrOps(ibv_qp_ex* qp, uint64_t ops, QpTransport transport) {
  if (ops & ~SupportedSendOps(transport))
    return Fail(EOPNOTSUPP, "qp: a send operation this transport cannot post");
  qp->wr_start = WrStart;
  qp->wr_complete = WrComplete;
  qp->wr_abort = WrAbort;
  qp->wr_set_sge = WrSetSge;
  qp->wr_set_sge_list = WrSetSgeList;
  qp->wr_set_inline_data = WrSetInlineData;
  qp->wr_set_inline_data_list = WrSetInlineDataList;
  if (transport == QpTransport::kUd) qp->wr_set_ud_addr = WrSetUdAddr;
  if (transport == QpTransport::kXrc) qp->wr_set_xrc_srqn = WrSetXrcSrqn;
  if (ops & IBV_QP_EX_WITH_SEND) qp->wr_send = WrSend;
  if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM) qp->wr_send_imm = WrSendImm;
  if (ops & IBV_QP_EX_WITH_SEND_WITH_INV) qp->wr_send_inv = WrSendInv;
  if (ops & IBV_QP_EX_WITH_RDMA_WRITE) qp->wr_rdma_write = WrRdmaWrite;
  if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) qp->wr_rdma_write_imm = WrRdmaWriteImm;
  if (ops & IBV_QP_EX_WITH_RDMA_READ) qp->wr_rdma_read = WrRdmaRead;
  if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) qp->wr_atomic_cmp_swp = WrAtomicCmpSwp;
  if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) qp->wr_atomic_fetch_add = WrAtomicFetchAdd;
  if (ops & IBV_QP_EX_WITH_BIND_MW) qp->wr_bind_mw = WrBindMw;
  if (ops & IBV_QP_EX_WITH_LOCAL_INV) qp->wr_local_inv = WrLocalInv;
  return {};
}

Result<void> InstallCqExOps(ibv_cq_ex* cq, uint64_t wc_flags) {
  if (wc_flags & ~kSupportedWcFlags)
    return Fail(EOPNOTSUPP, "cq: a completion field this device cannot report");
  cq->start_poll = StartPoll;
  cq->next_poll = NextPoll;
  cq->end_poll = EndPoll;
  cq->read_opcode = ReadOpcode;
  cq->read_vendor_err = ReadVendorErr;
  cq->read_wc_flags = ReadWcFlags;
  if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN) cq->read_byte_len = ReadByteLen;
  if (wc_flags & IBV_WC_EX_WITH_IMM) cq->read_imm_data = ReadImmData;
  if (wc_flags & IBV_WC_EX_WITH_QP_NUM) cq->read_qp_num = ReadQpNum;
  if (wc_flags & IBV_WC_EX_WITH_SRC_QP) cq->read_src_qp = ReadSrcQp;
  if (wc_flags & IBV_WC_EX_WITH_SLID) cq->read_slid = ReadSlid;
  if (wc_flags & IBV_WC_EX_WITH_SL) cq->read_sl = ReadSl;
  if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS) cq->read_dlid_path_bits = ReadDlidPathBits;
  if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) cq->read_completion_ts = ReadCompletionTs;
  return {};
}

}  // namespace onchip::driver::rings
