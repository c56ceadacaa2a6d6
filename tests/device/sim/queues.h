// Test-side builders for the queue commands: a fixture that brings the HCA up, allocates UARs
// and PDs, and writes CREATE_EQ / CREATE_CQ / CREATE_QP / CREATE_SRQ inputs whose queue pages lie
// in the command writer's DMA arena (mapped in the IOMMU), so each test changes one field and
// checks the one refusal; and the QP transition commands with contexts each transition accepts.
// A command of a user context (uid != 0) places its queue in that context's own arena, mapped for
// its uid, as a device daemon maps a client's memory: a user context may name only its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/srq.h"

namespace onchip::sim::testing {

// The shape of a QP's buffer: 2^log_rq receive WQEs of 16 << log_rq_stride bytes (none when
// log_rq is negative: the RQ type is then zero-length), then 2^log_sq send basic blocks (none
// when log_sq is negative: no_sq).
struct QpShape {
  uint8_t st = prm::QP_ST_RC;
  int log_rq = 4;
  uint32_t log_rq_stride = 2;  // 64-byte receive WQEs
  int log_sq = 6;              // 4 KiB of send ring
  uint32_t log_page_size = 0;  // 4 KiB pages
  uint64_t bytes() const {
    return (log_rq < 0 ? 0 : (uint64_t{1} << log_rq) << (4 + log_rq_stride)) +
           (log_sq < 0 ? 0 : uint64_t{64} << log_sq);
  }
  uint32_t pages() const {
    const uint64_t page = uint64_t{4096} << log_page_size;
    return static_cast<uint32_t>(std::max<uint64_t>(1, (bytes() + page - 1) / page));
  }
};

class QueueTest : public SimTest {
 protected:
  // Queue pages and doorbell records: the top 2 MiB of the arena, which neither the cmdq, the
  // mailbox pool nor the pages given with MANAGE_PAGES reach.
  static constexpr uint64_t kQueueIova = CommandWriter::kArenaIova + (6 << 20);
  static constexpr uint64_t kDbrIova = CommandWriter::kArenaIova + (8 << 20) - 4096;
  static constexpr uint64_t kQpDbrIova = kDbrIova + 64;
  static constexpr uint64_t kSrqDbrIova = kDbrIova + 128;
  // An IOVA no mapping covers.
  static constexpr uint64_t kUnmappedIova = uint64_t{0x7} << 36;

  // A user context's arena: kUserArenaBytes at UserArenaIova(uid), laid out as the top 2 MiB of
  // the writer's arena (queue pages from its start, doorbell records in its last page).
  static constexpr uint64_t kUserArenaBytes = 2 << 20;
  static constexpr uint64_t UserArenaIova(uint16_t uid) { return (uint64_t{0x100} + uid) << 32; }

  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    uar_ = AllocUar(0);
  }
  void TearDown() override {
    SimTest::TearDown();
    sim_.reset();  // the device, and with it every mapping, goes before the memory
    user_arenas_.clear();
  }

  // Where the queue pages and doorbell records of a command of `uid` lie.
  uint64_t QueueIova(uint16_t uid) { return uid == 0 ? kQueueIova : UserArena(uid); }
  uint64_t DbrIova(uint16_t uid) { return QueueIova(uid) + (kDbrIova - kQueueIova); }
  // The arena of user context `uid`, mapped for it on first use.
  uint64_t UserArena(uint16_t uid) {
    if (!user_arenas_.contains(uid)) {
      void* p = std::aligned_alloc(4096, kUserArenaBytes);
      if (p == nullptr) std::abort();
      std::memset(p, 0, kUserArenaBytes);
      user_arenas_.emplace(uid, ArenaBytes(static_cast<std::byte*>(p)));
      if (!sim_->MapDmaFor(uid, {UserArenaIova(uid), kUserArenaBytes, p, -1, 0})) std::abort();
    }
    return UserArenaIova(uid);
  }

  uint32_t AllocUar(uint16_t uid) {
    auto in = prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR);
    in.set(prm::alloc_uar_in::uid, uid);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::alloc_uar_out::uar));
  }

  // CREATE_EQ of 2^log_size EQEs in `pages` pages of 4 KiB << log_page_size from kQueueIova.
  prm::Message<prm::create_eq_in> EqIn(uint32_t log_size = 7, uint32_t pages = 2,
                                       uint32_t log_page_size = 0, uint16_t uid = 0) {
    using In = prm::create_eq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_EQ, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(In::eq_context_entry.log_eq_size, log_size)
        .set(In::eq_context_entry.uar_page, uar_)
        .set(In::eq_context_entry.intr, 1)
        .set(In::eq_context_entry.log_page_size, log_page_size)
        .set(In::event_bitmask[0], 1);  // completion events
    for (uint32_t i = 0; i < pages; ++i)
      in.set(In::pas[i], QueueIova(uid) + (uint64_t{i} << (12 + log_page_size)));
    return in;
  }
  Reply CreateEq(const prm::Message<prm::create_eq_in>& in) { return Exec(in, 16); }
  uint32_t NewEq() {
    auto r = CreateEq(EqIn());
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_eq_out::eq_number));
  }
  Reply DestroyEq(uint32_t eqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_eq_in>(prm::DESTROY_EQ);
    in.set(prm::destroy_eq_in::eq_number, eqn).set(prm::mbox_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryEq(uint32_t eqn, std::size_t pas = 8) {
    auto in = prm::CommandIn<prm::query_eq_in>(prm::QUERY_EQ);
    in.set(prm::query_eq_in::eq_number, eqn);
    return Exec(in, prm::size_bytes<prm::query_eq_out> + 8 * pas);
  }

  // CREATE_CQ of 2^log_size 64-byte CQEs on `eqn` in `pages` 4 KiB pages from kQueueIova.
  prm::Message<prm::create_cq_in> CqIn(uint32_t eqn, uint32_t log_size = 7, uint32_t pages = 2,
                                       uint16_t uid = 0) {
    using In = prm::create_cq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_CQ, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(In::cq_context.log_cq_size, log_size)
        .set(In::cq_context.uar_page, uar_)
        .set(In::cq_context.c_eqn_or_apu_element, eqn)
        .set(In::cq_context.dbr_addr, DbrIova(uid));
    for (uint32_t i = 0; i < pages; ++i) in.set(In::pas[i], QueueIova(uid) + uint64_t{i} * 4096);
    return in;
  }
  Reply CreateCq(const prm::Message<prm::create_cq_in>& in) { return Exec(in, 16); }
  uint32_t NewCq(uint32_t eqn) {
    auto r = CreateCq(CqIn(eqn));
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_cq_out::cqn));
  }
  Reply DestroyCq(uint32_t cqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_cq_in>(prm::DESTROY_CQ);
    in.set(prm::destroy_cq_in::cqn, cqn).set(prm::destroy_cq_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryCq(uint32_t cqn, std::size_t pas = 8) {
    auto in = prm::CommandIn<prm::query_cq_in>(prm::QUERY_CQ);
    in.set(prm::query_cq_in::cqn, cqn);
    return Exec(in, prm::size_bytes<prm::query_cq_out> + 8 * pas);
  }

  uint32_t AllocPd(uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD);
    in.set(prm::alloc_pd_in::uid, uid);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::alloc_pd_out::pd));
  }

  // CREATE_QP of `shape` on `pd` with both CQs `cqn`, this fixture's UAR and pages from
  // kQueueIova.
  prm::Message<prm::create_qp_in> QpIn(uint32_t pd, uint32_t cqn, const QpShape& shape = {},
                                       uint16_t uid = 0) {
    using In = prm::create_qp_in;
    const uint32_t pages = shape.pages();
    auto in = prm::CommandIn<In>(prm::CREATE_QP, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(In::qpc.st, shape.st)
        .set(In::qpc.pm_state, prm::QP_PM_MIGRATED)
        .set(In::qpc.pd, pd)
        .set(In::qpc.uar_page, uar_)
        .set(In::qpc.cqn_snd, cqn)
        .set(In::qpc.cqn_rcv, cqn)
        .set(In::qpc.dbr_addr, DbrIova(uid) + (kQpDbrIova - kDbrIova))
        .set(In::qpc.log_page_size, shape.log_page_size);
    if (shape.log_rq < 0) {
      in.set(In::qpc.rq_type, prm::ZERO_LEN_RQ);
    } else {
      in.set(In::qpc.log_rq_size, static_cast<uint32_t>(shape.log_rq))
          .set(In::qpc.log_rq_stride, shape.log_rq_stride);
    }
    if (shape.log_sq < 0)
      in.set(In::qpc.no_sq, 1);
    else
      in.set(In::qpc.log_sq_size, static_cast<uint32_t>(shape.log_sq));
    for (uint32_t i = 0; i < pages; ++i)
      in.set(In::pas[i], QueueIova(uid) + (uint64_t{i} << (12 + shape.log_page_size)));
    return in;
  }
  Reply CreateQp(const prm::Message<prm::create_qp_in>& in) { return Exec(in, 16); }
  uint32_t NewQp(uint32_t pd, uint32_t cqn, const QpShape& shape = {}) {
    auto r = CreateQp(QpIn(pd, cqn, shape));
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_qp_out::qpn));
  }
  Reply DestroyQp(uint32_t qpn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_qp_in>(prm::DESTROY_QP);
    in.set(prm::destroy_qp_in::qpn, qpn).set(prm::destroy_qp_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryQp(uint32_t qpn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
    in.set(prm::query_qp_in::qpn, qpn).set(prm::mbox_in::uid, uid);
    return Exec(in, prm::size_bytes<prm::query_qp_out>);
  }

  // A transition command (layout L, which carries a context at the common place unless it is
  // qp_2err_in / qp_2rst_in) with nothing but the QP number, the mask and the uid set.
  using Ctx = prm::qpc_bits<prm::rst2init_qp_in::qpc.bit_offset>;
  template <class L>
  prm::Message<L> Transition(uint16_t opcode, uint32_t qpn, uint32_t opt_param_mask = 0,
                             uint16_t uid = 0) {
    auto in = prm::CommandIn<L>(opcode);
    in.set(L::qpn, qpn).set(L::uid, uid);
    if constexpr (requires { L::opt_param_mask; }) in.set(L::opt_param_mask, opt_param_mask);
    return in;
  }
  // The contexts a RoCE driver sends for each step of RST -> INIT -> RTR -> RTS.
  prm::Message<prm::rst2init_qp_in> Rst2Init(uint32_t qpn, uint8_t st, uint16_t uid = 0) {
    auto in = Transition<prm::rst2init_qp_in>(prm::RST2INIT_QP, qpn, 0, uid);
    in.set(Ctx::primary_address_path.vhca_port_num, 1)
        .set(Ctx::primary_address_path.pkey_index, 0);
    if (st == prm::QP_ST_RC) in.set(Ctx::rre, 1).set(Ctx::rwe, 1).set(Ctx::rae, 1);
    if (st == prm::QP_ST_UC) in.set(Ctx::rwe, 1);
    if (st == prm::QP_ST_UD) in.set(Ctx::q_key, 0x1234);
    return in;
  }
  prm::Message<prm::init2rtr_qp_in> Init2Rtr(uint32_t qpn, uint8_t st, uint32_t remote_qpn = 0x42,
                                             uint16_t uid = 0) {
    auto in = Transition<prm::init2rtr_qp_in>(prm::INIT2RTR_QP, qpn, 0, uid);
    in.set(Ctx::mtu, 3).set(Ctx::log_msg_max, 30);
    if (st != prm::QP_ST_UD) {
      in.set(Ctx::remote_qpn, remote_qpn)
          .set(Ctx::next_rcv_psn, 0x100)
          .set(Ctx::primary_address_path.vhca_port_num, 1)
          .set(Ctx::primary_address_path.src_addr_index, 1)
          .set(Ctx::primary_address_path.hop_limit, 64)
          .set(Ctx::primary_address_path.udp_sport, 0xc001)
          .set(Ctx::primary_address_path.rmac_47_32, 0x0202)
          .set(Ctx::primary_address_path.rmac_31_0, 0x03040506)
          .set(Ctx::primary_address_path.rgid_rip[10], 0xff)
          .set(Ctx::primary_address_path.rgid_rip[11], 0xff)
          .set(Ctx::primary_address_path.rgid_rip[12], 10)
          .set(Ctx::primary_address_path.rgid_rip[15], 2);
    }
    if (st == prm::QP_ST_RC) in.set(Ctx::log_rra_max, 4).set(Ctx::min_rnr_nak, 12);
    return in;
  }
  prm::Message<prm::rtr2rts_qp_in> Rtr2Rts(uint32_t qpn, uint8_t st, uint16_t uid = 0) {
    auto in = Transition<prm::rtr2rts_qp_in>(prm::RTR2RTS_QP, qpn, 0, uid);
    in.set(Ctx::next_send_psn, 0x200);
    if (st == prm::QP_ST_RC)
      in.set(Ctx::retry_count, 7)
          .set(Ctx::rnr_retry, 7)
          .set(Ctx::log_sra_max, 4)
          .set(Ctx::primary_address_path.ack_timeout, 14);
    return in;
  }
  template <class M>
  Reply Modify(const M& in) {
    return Exec(in, 16);
  }
  // Drives a fresh QP to `state` (RST, INIT, RTR, RTS or ERR) through the legal commands.
  void DriveTo(uint32_t qpn, uint8_t st, prm::QpState state) {
    if (state == prm::QP_STATE_ERR) {
      ASSERT_TRUE(Ok(Modify(Transition<prm::qp_2err_in>(prm::QP_2ERR, qpn))));
      return;
    }
    if (state == prm::QP_STATE_RST) return;
    ASSERT_TRUE(Ok(Modify(Rst2Init(qpn, st))));
    if (state == prm::QP_STATE_INIT) return;
    ASSERT_TRUE(Ok(Modify(Init2Rtr(qpn, st))));
    if (state == prm::QP_STATE_RTR) return;
    ASSERT_TRUE(Ok(Modify(Rtr2Rts(qpn, st))));
  }
  uint32_t QpState(uint32_t qpn) {
    auto q = QueryQp(qpn);
    EXPECT_TRUE(Ok(q));
    return static_cast<uint32_t>(q.get(prm::query_qp_out::qpc.state));
  }

  // CREATE_SRQ of 2^log_size WQEs of 16 << log_stride bytes on `pd`, pages from kQueueIova.
  prm::Message<prm::create_srq_in> SrqIn(uint32_t pd, uint32_t log_size = 6,
                                         uint32_t log_stride = 2, uint16_t uid = 0) {
    using In = prm::create_srq_in;
    using S = prm::srqc_bits<In::srq_context_entry.bit_offset>;
    const uint64_t bytes = uint64_t{1} << (log_size + 4 + log_stride);
    const uint32_t pages = static_cast<uint32_t>(std::max<uint64_t>(1, bytes / 4096));
    auto in = prm::CommandIn<In>(prm::CREATE_SRQ, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(S::log_srq_size, log_size)
        .set(S::log_rq_stride, log_stride)
        .set(S::pd, pd)
        .set(S::dbr_addr, DbrIova(uid) + (kSrqDbrIova - kDbrIova));
    for (uint32_t i = 0; i < pages; ++i) in.set(In::pas[i], QueueIova(uid) + uint64_t{i} * 4096);
    return in;
  }
  Reply CreateSrq(const prm::Message<prm::create_srq_in>& in) { return Exec(in, 16); }
  uint32_t NewSrq(uint32_t pd) {
    auto r = CreateSrq(SrqIn(pd));
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_srq_out::srqn));
  }
  Reply DestroySrq(uint32_t srqn, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_srq_in>(prm::DESTROY_SRQ);
    in.set(prm::destroy_srq_in::srqn, srqn).set(prm::destroy_srq_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QuerySrq(uint32_t srqn, uint16_t uid = 0, std::size_t pas = 8) {
    auto in = prm::CommandIn<prm::query_srq_in>(prm::QUERY_SRQ);
    in.set(prm::query_srq_in::srqn, srqn).set(prm::mbox_in::uid, uid);
    return Exec(in, prm::size_bytes<prm::query_srq_out> + 8 * pas);
  }
  Reply ArmRq(uint32_t srqn, uint32_t lwm, uint16_t uid = 0,
              uint16_t op_mod = prm::ARM_RQ_IN_OP_MOD_SRQ) {
    auto in = prm::CommandIn<prm::arm_rq_in>(prm::ARM_RQ, op_mod);
    in.set(prm::arm_rq_in::srq_number, srqn)
        .set(prm::arm_rq_in::lwm, lwm)
        .set(prm::arm_rq_in::uid, uid);
    return Exec(in, 16);
  }

  uint32_t uar_ = 0;

 private:
  struct FreeArena {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using ArenaBytes = std::unique_ptr<std::byte, FreeArena>;
  std::map<uint16_t, ArenaBytes> user_arenas_;
};

}  // namespace onchip::sim::testing
