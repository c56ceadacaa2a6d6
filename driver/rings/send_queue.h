// The send half of a QP: WQEs built in the send ring, the doorbell record, the doorbell or
// BlueFlame write, and the per-WQE bookkeeping a completion needs.
//
// The ring is `wqe_cnt` basic blocks of 64 bytes (a power of two). `cur_post` counts basic
// blocks: a WQE starts at block cur_post % wqe_cnt, its ctrl segment carries the 16-bit index
// cur_post & 0xffff, and it may run past the ring's end and continue at its start (segments are
// 16 bytes, so only inline data splits). Per WQE the slot of its first block keeps the wr_id, the
// work-request count at post and where the next WQE starts, so a completion for index i retires
// every earlier unsignaled WQE at once (rdma-core providers/mlx5/cq.c, mlx5_parse_cqe: the
// tail moves to wqe_head of the completed index).
//
// Posting (post_send and the ibv_wr_* calls): per WQE, ctrl (opcode, index, qpn, ds,
// fence/completion/solicited, imm or the key to invalidate), then per opcode raddr, atomic,
// the UD address vector, data segments or inline data, or a UMR for BIND_MW / LOCAL_INV. Then
// the doorbell: the record's send counter (cur_post & 0xffff) after a store barrier, then on the
// bfreg either a BlueFlame copy of the single small WQE (ds > 1, ds * 16 <= the half's size) with
// the 64-byte write-combined line copy, or the 8-byte store of the last WQE's first ctrl bytes;
// then the half flips and Bus::DoorbellRung() tells a sleeping software device to look.
//
// Errors as libmlx5 gives them (bad_wr = the first work request not posted; those before it are
// posted and rung): an opcode outside the verbs set or not valid on the QP's transport EINVAL;
// atomics on a QP created without them EOPNOTSUPP; a full queue ENOMEM; more SGEs than the QP's
// max_send_sge (or any SGE before RTS, see SetStateMaxGs) ENOMEM; inline data longer than
// max_inline_data ENOMEM; a UMR whose window is longer than one KLM (2 GiB) EOPNOTSUPP. A function
// that is gone (its daemon died, bus::Bus::gone) takes no more work: PostSend and WrComplete
// answer EIO and ring nothing (bad_wr the first request).
//
// Threads: with `locked` the queue takes a spinlock, else (a thread domain) the caller posts
// from one thread at a time. Retire() runs under the CQ's poll and touches only the tail, which
// the poster reads with acquire ordering. No call on the hot path allocates or makes a syscall.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "driver/rings/bfreg.h"
#include "driver/bus/bus.h"
#include "driver/rings/qp_transport.h"
#include "driver/rings/queue_lock.h"
#include "uapi/prm/endian.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/result.h"

namespace onchip::driver::rings {

// kRaw: a raw packet QP's SQ. The software ConnectX's data engine does not yet execute Ethernet
// send queues, so every work request on one is refused with EOPNOTSUPP before it is written.
// kXrc: an XRC send QP: RC's operations, each WQE but BIND_MW / LOCAL_INV carrying the XRC
// segment (the remote XRC SRQ: wr.qp_type.xrc.remote_srqn, or ibv_wr_set_xrc_srqn, a setter
// the WQE waits for like its data) right after ctrl.
// The ring memory and the QP facts a send queue needs, as the object layer created them.
struct SendQueueDesc {
  std::byte* ring = nullptr;        // wqe_cnt * 64 bytes, the device's view of the send queue
  uint32_t wqe_cnt = 0;             // basic blocks, a power of two
  uint32_t max_post = 0;            // work requests in flight at most (the QP's max_send_wr)
  prm::Be32* db_counter = nullptr;  // the doorbell record's snd_counter (MLX5_SND_DBR)
  Bfreg* bf = nullptr;              // where the doorbell rings
  bus::Bus* bus = nullptr;          // DoorbellRung() after each doorbell
  uint32_t qpn = 0;
  QpTransport transport = QpTransport::kRc;
  uint32_t max_inline_data = 0;
  uint32_t max_send_sge = 0;
  bool sq_sig_all = false;  // every WQE asks for a completion
  bool atomics = true;      // the QP was created with atomic access
  // The ring was sized for a UMR (bind / local invalidate); else such a work request is EINVAL,
  // as on a libmlx5 QP created with send_ops_flags that name neither.
  bool umr = true;
  bool locked = true;       // false: a thread domain's QP, one poster at a time
};

// What a requester completion learns from the WQE it names.
struct SendSlot {
  uint64_t wr_id = 0;
  uint32_t wr_count = 0;   // work requests posted before this one
  uint32_t next_post = 0;  // cur_post after this WQE
  // IBV_WC_BIND_MW / IBV_WC_LOCAL_INV for UMR WQEs (the CQE's opcode cannot tell them apart),
  // else the opcode the CQE's WQE opcode maps to.
  ibv_wc_opcode wc_opcode = IBV_WC_SEND;
};

class SendQueue {
 public:
  // Whether the bus's function is gone (bus::Bus::gone): one relaxed load.
  bool device_gone() const { return bus_ != nullptr && bus_->gone(); }
  SendQueue() = default;
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // Checks the description (EINVAL: null ring, record, bfreg or bus; wqe_cnt not a power of two;
  // max_post 0 or above wqe_cnt) and allocates the per-slot bookkeeping (ENOMEM).
  Result<void> Init(const SendQueueDesc& desc);

  // ibv_post_send: returns 0 or the errno, with *bad_wr set on failure.
  int PostSend(ibv_send_wr* wr, ibv_send_wr** bad_wr);

  // libmlx5's operational gate: the most SGEs a work request may carry in the QP's current state
  // (-1 at create and after RESET: nothing passes, post_send ENOMEM and ibv_wr_complete EINVAL;
  // max_send_sge from RTS). The object layer calls it on each transition; Init sets
  // max_send_sge, which is what tests on plain memory want.
  void SetStateMaxGs(int max_gs) { state_max_gs_ = max_gs; }

  // A requester CQE for WQE index `wqe_counter`: retires it and every earlier WQE and returns
  // its slot. Called by the CQ poller.
  const SendSlot& Retire(uint16_t wqe_counter) {
    const SendSlot& s = slots_[wqe_counter & (wqe_cnt_ - 1)];
    tail_.store(s.wr_count + 1, std::memory_order_release);
    bb_tail_.store(s.next_post, std::memory_order_release);
    return s;
  }

  // The extended API (ibv_qp_ex): Start locks; each Wr* builds one WQE (its data completes it);
  // errors are kept and returned by Complete, which rolls everything back on error and else rings
  // once for the batch; Abort rolls back.
  void WrStart();
  void WrSend(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t imm_raw);
  void WrRdma(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t rkey, uint64_t raddr,
              uint32_t imm_raw);
  void WrAtomic(uint64_t wr_id, unsigned flags, uint8_t opcode, uint32_t rkey, uint64_t raddr,
                uint64_t swap_add, uint64_t compare);
  void WrBindMw(uint64_t wr_id, unsigned flags, ibv_mw* mw, uint32_t new_rkey,
                const ibv_mw_bind_info& info);
  void WrLocalInv(uint64_t wr_id, unsigned flags, uint32_t invalidate_rkey);
  void WrSetUdAddr(const ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey);
  void WrSetXrcSrqn(uint32_t remote_srqn);
  void WrSetSge(uint32_t lkey, uint64_t addr, uint32_t length);
  void WrSetSgeList(std::size_t num_sge, const ibv_sge* sg_list);
  void WrSetInline(const void* addr, std::size_t length);
  void WrSetInlineList(std::size_t num_buf, const ibv_data_buf* buf_list);
  int WrComplete();
  void WrAbort();

  uint32_t qpn() const { return qpn_; }
  QpTransport transport() const { return transport_; }
  uint32_t cur_post() const { return cur_post_; }
  uint32_t wqe_cnt() const { return wqe_cnt_; }
  // Work requests posted and not yet retired by a completion.
  uint32_t outstanding() const { return head_ - tail_.load(std::memory_order_acquire); }

 private:
  // The producer's working state while WQEs are built: copied from the queue at the start of a
  // post (so the compiler keeps it in registers while WQE bytes are stored through the ring) and
  // written back when the post ends. The queue's constant facts (ring, slots, qpn) are read
  // through `q` where needed rather than copied: fewer live values, fewer spills. The extended
  // API keeps one across its calls and writes it back only on a successful ibv_wr_complete,
  // which makes rollback free.
  struct Builder {
    const SendQueue* q;
    uint32_t cur_post;   // basic blocks posted
    uint32_t head;       // work requests posted
    uint8_t next_fence;  // the fence the next WQE inherits
    // The open WQE.
    std::byte* ctrl;
    uint32_t opcode_word;  // the ctrl's first word as stored (big-endian opmod_idx_opcode)
    uint64_t ctrl_second;  // the ctrl's second 8 bytes as stored (fm_ce_se, imm)
    std::byte* seg;      // the next 16 bytes to write
    uint32_t ds;
    uint32_t slot;
    // The last finished WQE (what the doorbell names) and its first 8 bytes as stored, kept in
    // a register so the doorbell never reads back what was just written.
    std::byte* last_ctrl;
    uint32_t last_ds;
    uint64_t last_doorbell;

    void Begin(uint64_t wr_id, unsigned send_flags, uint8_t opcode, uint32_t imm_raw,
               ibv_wc_opcode wc_opcode, bool umr);
    std::byte* TakeSegment();
    void PutRaddr(uint32_t rkey, uint64_t raddr);
    void PutAtomic(uint8_t opcode, uint64_t swap_add, uint64_t compare);
    std::byte* PutXrc(uint32_t remote_srqn);
    std::byte* ReserveDatagram();
    void PutData(uint32_t lkey, uint64_t addr, uint32_t length);
    int PutInline(const ibv_sge* sges, const ibv_data_buf* bufs, std::size_t n, uint32_t max);
    int PutUmr(bool type2, uint32_t target_key, uint32_t new_rkey, const ibv_mw_bind_info& info);
    void PutDatagram(const ibv_send_wr* wr);  // UD: the address vector of wr.ud
    int PutUmrOf(const ibv_send_wr* wr);      // BIND_MW or LOCAL_INV
    void Finish();
  };

  void Load(Builder& b) const;
  void Store(const Builder& b);
  int CheckRoom(uint32_t head, uint32_t cur_post) const;
  int CheckOpcode(uint8_t opcode) const;
  int RefuseOpcode(uint32_t head, uint32_t cur_post, int num_sge, uint8_t opcode) const;
  bool Postable(uint8_t opcode) const {
    return opcode < 64 && ((mlx5_postable_ >> opcode) & 1) != 0;
  }
  template <class Step>
  static int OnCopy(Builder& b, Step step);
  int PostOne(Builder& b, ibv_send_wr* wr);
  bool Single(const ibv_send_wr* wr) const;
  int PostList(ibv_send_wr* wr, ibv_send_wr** bad_wr);
  // The doorbell record, then the bfreg: the last WQE's BlueFlame copy, or its first 8 bytes.
  void RingDoorbell(uint32_t cur_post, const std::byte* last, uint32_t last_ds, uint64_t last_word,
                    uint32_t nreq);
  void WriteBfreg(const std::byte* last, uint32_t last_ds, uint64_t last_word,
                  bool blueflame) const;
  void CopyLongWqe(std::byte* dst, const std::byte* last, uint32_t last_ds) const;
  void WriteSharedBfreg(const std::byte* last, uint32_t last_ds, uint64_t last_word,
                        bool blueflame) const;
  // The common start of each ibv_wr_* builder: false (error kept) when it cannot begin.
  bool WrBegin(uint8_t opcode);
  void WrFinishSetter();
  // kXrc: reserves the open WQE's XRC segment, which ibv_wr_set_xrc_srqn fills.
  void WrReserveXrc();

  std::byte* ring_ = nullptr;
  std::byte* qend_ = nullptr;
  uint32_t wqe_cnt_ = 0;
  uint32_t max_post_ = 0;
  uint32_t worst_bbs_ = 0;  // basic blocks of the largest WQE this queue can build
  prm::Be32* db_counter_ = nullptr;
  Bfreg* bf_ = nullptr;
  bus::Bus* bus_ = nullptr;
  uint32_t qpn_ = 0;
  QpTransport transport_ = QpTransport::kRc;
  uint32_t max_inline_ = 0;
  uint32_t max_sge_ = 0;
  int state_max_gs_ = 0;
  uint8_t sig_bits_ = 0;
  bool atomics_ = true;
  bool umr_ = true;
  uint64_t mlx5_postable_ = 0;  // bit n: mlx5 opcode n posts here (CheckOpcode allows it)
  uint32_t single_opcodes_ = 0;  // bit n: ibv_wr_opcode n takes PostSend's short path
  uint32_t bf_max_ds_ = 0;      // the largest WQE (16-byte units) one BlueFlame copy carries
  QueueLock lock_;
  std::unique_ptr<SendSlot[]> slots_;

  // Producer state (under lock_).
  uint32_t cur_post_ = 0;  // basic blocks posted
  uint32_t head_ = 0;      // work requests posted
  uint8_t fm_cache_ = 0;   // the fence the next WQE inherits (after a UMR: small fence)
  // Consumer state (written by Retire).
  std::atomic<uint32_t> tail_{0};     // work requests retired
  std::atomic<uint32_t> bb_tail_{0};  // basic blocks retired

  // The extended API's batch.
  Builder wr_{};
  uint32_t wr_nreq_ = 0;
  int wr_err_ = 0;
  bool wr_open_ = false;   // a WQE waits for its setters
  int wr_setters_ = 0;     // setters still to come for the open WQE
  bool wr_atomic_ = false;
  std::byte* wr_av_ = nullptr;
  std::byte* wr_xrc_ = nullptr;  // the open WQE's XRC segment, until ibv_wr_set_xrc_srqn
};

}  // namespace onchip::driver::rings
