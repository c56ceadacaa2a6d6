// Writes the firmware fuzz target's seed corpus: valid commands in both input modes, built with
// the cmdq codec and the PRM layouts, so the fuzzer starts from inputs that reach deep checks.
//
//   bazel run //tools/sim/fuzz:make_seeds -- $PWD/tools/sim/fuzz/corpus
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/sim/fuzz/firmware_fuzz.h"
#include "uapi/cmdq/mailbox.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/sw_icm.h"
#include "uapi/prm/wq.h"
#include "uapi/prm/xrc.h"

namespace {

using namespace onchip;
using onchip::sim::fuzz::kArenaBytes;
using onchip::sim::fuzz::kArenaIova;
using onchip::sim::fuzz::kFlagBringUp;
using onchip::sim::fuzz::kFlagObjects;
using onchip::sim::fuzz::kFlagRaw;

class Arena final : public cmdq::BlockAccess {
 public:
  std::vector<std::byte> bytes = std::vector<std::byte>(kArenaBytes);
  std::byte* Block(uint64_t addr) override {
    if (addr < kArenaIova || addr - kArenaIova + cmdq::kBlockBytes > kArenaBytes) return nullptr;
    return bytes.data() + (addr - kArenaIova);
  }
};

// Puts one command in `slot` with its blocks from `next_block` (1 KiB units after the cmdq page).
void Encode(Arena& a, uint32_t slot, std::span<const std::byte> in, std::size_t out_len,
            std::size_t& next_block) {
  std::vector<uint64_t> in_addrs, out_addrs;
  for (std::size_t i = 0; i < cmdq::BlocksFor(in.size()); ++i)
    in_addrs.push_back(kArenaIova + 4096 + 1024 * next_block++);
  for (std::size_t i = 0; i < cmdq::BlocksFor(out_len); ++i)
    out_addrs.push_back(kArenaIova + 4096 + 1024 * next_block++);
  cmdq::Entry e(a.bytes.data() + slot * 64, 64);
  const auto token = static_cast<uint8_t>(slot + 1);
  if (!cmdq::PrepareOutput(out_len, out_addrs, token, a, e) ||
      !cmdq::EncodeInput(in, in_addrs, token, a, e)) {
    std::fprintf(stderr, "encode failed\n");
    std::exit(1);
  }
}

void Write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

std::vector<uint8_t> CmdqSeed(uint8_t flags, uint32_t doorbell, const Arena& a, std::size_t used) {
  std::vector<uint8_t> s = {flags, uint8_t(doorbell >> 24), uint8_t(doorbell >> 16),
                            uint8_t(doorbell >> 8), uint8_t(doorbell)};
  for (std::size_t i = 0; i < used; ++i) s.push_back(std::to_integer<uint8_t>(a.bytes[i]));
  return s;
}

void AddRaw(std::vector<uint8_t>& s, std::span<const std::byte> in, uint16_t out_len) {
  s.push_back(uint8_t(in.size() >> 8));
  s.push_back(uint8_t(in.size()));
  s.push_back(uint8_t(out_len >> 8));
  s.push_back(uint8_t(out_len));
  for (std::byte b : in) s.push_back(std::to_integer<uint8_t>(b));
}

// An EQ of 64 entries on UAR `uar` in the arena's page 0x8000, and a CQ of 64 on it in page
// 0x9000 with its record at 0xf000: the queues every raw-mode object seed starts from.
void AddEqAndCq(std::vector<uint8_t>& s, uint32_t uar) {
  auto eq = prm::CommandIn<prm::create_eq_in>(prm::CREATE_EQ, 0, 8);
  eq.set(prm::create_eq_in::eq_context_entry.log_eq_size, 6)
      .set(prm::create_eq_in::eq_context_entry.uar_page, uar)
      .set(prm::create_eq_in::pas[0], kArenaIova + 0x8000);
  AddRaw(s, eq.bytes(), 16);
  auto cq = prm::CommandIn<prm::create_cq_in>(prm::CREATE_CQ, 0, 8);
  cq.set(prm::create_cq_in::cq_context.log_cq_size, 6)
      .set(prm::create_cq_in::cq_context.uar_page, uar)
      .set(prm::create_cq_in::cq_context.dbr_addr, kArenaIova + 0xf000)
      .set(prm::create_cq_in::pas[0], kArenaIova + 0x9000);
  AddRaw(s, cq.bytes(), 16);
}

// A QP's way from RESET to RTS in a raw-mode seed: RST2INIT_QP, INIT2RTR_QP and RTR2RTS_QP on
// port 1 at MTU 1024 (mtu 3), with the context fields that differ between transports. A zero
// leaves its field clear, as the commands start.
struct QpToRts {
  uint32_t qpn = 0;
  bool remote_access = false;  // INIT: rre, rwe, rae
  uint32_t q_key = 0;          // INIT (UD)
  bool init_again = false;     // INIT2INIT_QP (the P_Key index) before RTR
  uint32_t remote_qpn = 0;     // RTR
  uint32_t log_msg_max = 0;    // RTR
  uint32_t next_rcv_psn = 0;   // RTR
  uint32_t log_rra_max = 0;    // RTR
  uint32_t min_rnr_nak = 0;    // RTR
  uint32_t path_port = 0;      // RTR: the primary address path's vhca_port_num
  uint32_t hop_limit = 0;      // RTR: the primary address path's
  uint32_t next_send_psn = 0;  // RTS
  uint32_t retry_count = 0;    // RTS
  uint32_t rnr_retry = 0;      // RTS
  uint32_t log_sra_max = 0;    // RTS
};

void AddQpToRts(std::vector<uint8_t>& s, const QpToRts& q) {
  using Ctx = prm::qpc_bits<prm::rst2init_qp_in::qpc.bit_offset>;
  auto init = prm::CommandIn<prm::rst2init_qp_in>(prm::RST2INIT_QP);
  init.set(prm::rst2init_qp_in::qpn, q.qpn).set(Ctx::primary_address_path.vhca_port_num, 1)
      .set(Ctx::q_key, q.q_key);
  if (q.remote_access) init.set(Ctx::rre, 1).set(Ctx::rwe, 1).set(Ctx::rae, 1);
  AddRaw(s, init.bytes(), 16);
  if (q.init_again) {
    auto again = prm::CommandIn<prm::init2init_qp_in>(prm::INIT2INIT_QP);
    again.set(prm::init2init_qp_in::qpn, q.qpn)
        .set(prm::init2init_qp_in::opt_param_mask, prm::QP_OPTPAR_PKEY_INDEX);
    AddRaw(s, again.bytes(), 16);
  }
  auto rtr = prm::CommandIn<prm::init2rtr_qp_in>(prm::INIT2RTR_QP);
  rtr.set(prm::init2rtr_qp_in::qpn, q.qpn).set(Ctx::mtu, 3).set(Ctx::log_msg_max, q.log_msg_max)
      .set(Ctx::remote_qpn, q.remote_qpn).set(Ctx::next_rcv_psn, q.next_rcv_psn)
      .set(Ctx::log_rra_max, q.log_rra_max).set(Ctx::min_rnr_nak, q.min_rnr_nak)
      .set(Ctx::primary_address_path.vhca_port_num, q.path_port)
      .set(Ctx::primary_address_path.hop_limit, q.hop_limit);
  AddRaw(s, rtr.bytes(), 16);
  auto rts = prm::CommandIn<prm::rtr2rts_qp_in>(prm::RTR2RTS_QP);
  rts.set(prm::rtr2rts_qp_in::qpn, q.qpn).set(Ctx::next_send_psn, q.next_send_psn)
      .set(Ctx::retry_count, q.retry_count).set(Ctx::rnr_retry, q.rnr_retry)
      .set(Ctx::log_sra_max, q.log_sra_max);
  AddRaw(s, rts.bytes(), 16);
}

// Bring-up commands through the queue, from a cold device.
void WriteCmdqBringupSeed(const std::string& dir) {
  Arena a;
  std::size_t blk = 0;
  Encode(a, 0, prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16, blk);
  Encode(a, 1, prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI).bytes(), 112, blk);
  Encode(a, 2, prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 0x1f).bytes(), 4112,
         blk);
  Encode(a, 3, prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::BOOT_PAGES).bytes(),
         16, blk);
  Write(dir, "cmdq_bringup", CmdqSeed(0, 0xf, a, 4096 + 1024 * blk));
}

// Resource commands through the queue on an initialized HCA with objects.
void WriteCmdqResourcesSeed(const std::string& dir) {
  Arena a;
  std::size_t blk = 0;
  Encode(a, 0, prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16, blk);
  auto memic = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
  memic.set(prm::alloc_memic_in::memic_size, 128)
      .set(prm::alloc_memic_in::range_start_addr, 0x80000)
      .set(prm::alloc_memic_in::range_size, 0x40000);
  Encode(a, 1, memic.bytes(), 16, blk);
  using In = prm::create_mkey_in;
  constexpr auto mkc = In::memory_key_mkey_entry;
  auto mtt = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 32);
  mtt.set(mkc.access_mode_1_0, 1).set(mkc.qpn, 0xffffff).set(mkc.pd, 1).set(mkc.umr_en, 1)
      .set(mkc.len, 8192).set(mkc.log_page_size, 12).set(mkc.translations_octword_size, 2)
      .set(In::translations_octword_actual_size, 2);
  Encode(a, 2, mtt.bytes(), 16, blk);
  auto q = prm::CommandIn<prm::query_mkey_in>(prm::QUERY_MKEY);
  q.set(prm::query_mkey_in::mkey_index, 1);
  Encode(a, 3, q.bytes(), prm::size_bytes<prm::query_mkey_out>, blk);
  auto d = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
  d.set(prm::dealloc_pd_in::pd, 1);
  Encode(a, 4, d.bytes(), 16, blk);
  Write(dir, "cmdq_resources", CmdqSeed(kFlagBringUp | kFlagObjects, 0x1f, a, 4096 + 1024 * blk));
}

// Raw mode: every resource command once, valid, on an initialized HCA with objects.
void WriteRawResourcesSeed(const std::string& dir) {
  std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
  AddRaw(s, prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR).bytes(), 16);
  auto du = prm::CommandIn<prm::dealloc_uar_in>(prm::DEALLOC_UAR);
  du.set(prm::dealloc_uar_in::uar, 8);
  AddRaw(s, du.bytes(), 16);
  AddRaw(s,
         prm::CommandIn<prm::alloc_transport_domain_in>(prm::ALLOC_TRANSPORT_DOMAIN).bytes(),
         16);
  auto dm = prm::CommandIn<prm::dealloc_memic_in>(prm::DEALLOC_MEMIC);
  dm.set(prm::dealloc_memic_in::memic_start_addr, 0x80000)
      .set(prm::dealloc_memic_in::memic_size, 4096);
  AddRaw(s, dm.bytes(), 16);
  auto dk = prm::CommandIn<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
  dk.set(prm::destroy_mkey_in::mkey_index, 2);
  AddRaw(s, dk.bytes(), 16);
  AddRaw(s, dk.bytes(), 16);
  dm.set(prm::dealloc_memic_in::memic_start_addr, 0x80000);
  AddRaw(s, dm.bytes(), 16);
  prm::Message<prm::general_obj_in_cmd_hdr> g;
  g.set(prm::general_obj_in_cmd_hdr::opcode, prm::QUERY_GENERAL_OBJECT)
      .set(prm::general_obj_in_cmd_hdr::obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(prm::general_obj_in_cmd_hdr::obj_id, 1);
  AddRaw(s, g.bytes(), 80);
  g.set(prm::general_obj_in_cmd_hdr::opcode, prm::DESTROY_GENERAL_OBJECT);
  AddRaw(s, g.bytes(), 16);
  auto take = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_TAKE);
  take.set(prm::manage_pages_in::input_num_entries, 4);
  AddRaw(s, take.bytes(), 48);
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, 1);
  AddRaw(s, force.bytes(), 16);
  Write(dir, "raw_resources", s);
}

// Raw mode: an EQ and a CQ on it in the arena, queried, moderated, destroyed in order.
void WriteRawQueuesSeed(const std::string& dir) {
  std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
  constexpr uint32_t kUar = 8;  // the UAR the object set allocates first
  auto eq = prm::CommandIn<prm::create_eq_in>(prm::CREATE_EQ, 0, 8);
  eq.set(prm::create_eq_in::eq_context_entry.log_eq_size, 6)  // 4 KiB: one page
      .set(prm::create_eq_in::eq_context_entry.uar_page, kUar)
      .set(prm::create_eq_in::event_bitmask[0], 1)
      .set(prm::create_eq_in::pas[0], kArenaIova + 0x8000);
  AddRaw(s, eq.bytes(), 16);
  auto qe = prm::CommandIn<prm::query_eq_in>(prm::QUERY_EQ);
  AddRaw(s, qe.bytes(), 280);
  auto cq = prm::CommandIn<prm::create_cq_in>(prm::CREATE_CQ, 0, 8);
  cq.set(prm::create_cq_in::cq_context.log_cq_size, 6)
      .set(prm::create_cq_in::cq_context.uar_page, kUar)
      .set(prm::create_cq_in::cq_context.dbr_addr, kArenaIova + 0xf000)
      .set(prm::create_cq_in::pas[0], kArenaIova + 0x9000);
  AddRaw(s, cq.bytes(), 16);
  auto qc = prm::CommandIn<prm::query_cq_in>(prm::QUERY_CQ);
  AddRaw(s, qc.bytes(), 280);
  auto mc = prm::CommandIn<prm::modify_cq_in>(prm::MODIFY_CQ);
  mc.set(prm::modify_cq_in::modify_field_select_resize_field_select, prm::CQ_MODIFY_PERIOD)
      .set(prm::cqc_bits<prm::modify_cq_in::cq_context.bit_offset>::cq_period, 16);
  AddRaw(s, mc.bytes(), 16);
  auto de = prm::CommandIn<prm::destroy_eq_in>(prm::DESTROY_EQ);
  AddRaw(s, de.bytes(), 16);  // busy: the CQ reports to it
  AddRaw(s, prm::CommandIn<prm::destroy_cq_in>(prm::DESTROY_CQ).bytes(), 16);
  AddRaw(s, de.bytes(), 16);
  Write(dir, "raw_queues", s);
}

// Raw mode: an SRQ and RC and UD QPs on a CQ, every transition, queried, torn down in order.
void WriteRawQpsSeed(const std::string& dir) {
  std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
  constexpr uint32_t kUar = 8;  // the UAR the object set allocates first
  constexpr uint32_t kPd = 1;   // its PD
  AddEqAndCq(s, kUar);
  using Srqc = prm::srqc_bits<prm::create_srq_in::srq_context_entry.bit_offset>;
  auto srq = prm::CommandIn<prm::create_srq_in>(prm::CREATE_SRQ, 0, 8);
  srq.set(Srqc::log_srq_size, 6).set(Srqc::log_rq_stride, 2).set(Srqc::pd, kPd)
      .set(Srqc::dbr_addr, kArenaIova + 0xf080)
      .set(prm::create_srq_in::pas[0], kArenaIova + 0xc000);
  AddRaw(s, srq.bytes(), 16);
  auto arm = prm::CommandIn<prm::arm_rq_in>(prm::ARM_RQ, prm::ARM_RQ_IN_OP_MOD_SRQ);
  arm.set(prm::arm_rq_in::lwm, 8);
  AddRaw(s, arm.bytes(), 16);
  AddRaw(s, prm::CommandIn<prm::query_srq_in>(prm::QUERY_SRQ).bytes(),
         prm::size_bytes<prm::query_srq_out> + 8);
  // RC: 16 x 64-byte receive WQEs, then 64 send basic blocks: two pages.
  constexpr auto qpc = prm::create_qp_in::qpc;
  auto rc = prm::CommandIn<prm::create_qp_in>(prm::CREATE_QP, 0, 16);
  rc.set(qpc.st, prm::QP_ST_RC).set(qpc.pm_state, prm::QP_PM_MIGRATED).set(qpc.pd, kPd)
      .set(qpc.uar_page, kUar).set(qpc.log_rq_size, 4).set(qpc.log_rq_stride, 2)
      .set(qpc.log_sq_size, 6).set(qpc.dbr_addr, kArenaIova + 0xf040)
      .set(prm::create_qp_in::pas[0], kArenaIova + 0xa000)
      .set(prm::create_qp_in::pas[1], kArenaIova + 0xb000);
  AddRaw(s, rc.bytes(), 16);
  // UD receiving from the SRQ: the send ring alone, one page.
  auto ud = prm::CommandIn<prm::create_qp_in>(prm::CREATE_QP, 0, 8);
  ud.set(qpc.st, prm::QP_ST_UD).set(qpc.pm_state, prm::QP_PM_MIGRATED).set(qpc.pd, kPd)
      .set(qpc.uar_page, kUar).set(qpc.rq_type, prm::SRQ_RQ).set(qpc.log_sq_size, 6)
      .set(qpc.dbr_addr, kArenaIova + 0xf048)
      .set(prm::create_qp_in::pas[0], kArenaIova + 0xd000);
  AddRaw(s, ud.bytes(), 16);
  for (uint32_t qpn : {2u, 3u}) {
    const bool is_rc = qpn == 2;
    if (is_rc) {
      AddQpToRts(s, {.qpn = qpn, .remote_access = true, .init_again = true, .remote_qpn = 2,
                     .log_msg_max = 30, .next_rcv_psn = 1, .log_rra_max = 2,
                     .min_rnr_nak = 12, .path_port = 1, .hop_limit = 64, .next_send_psn = 1,
                     .retry_count = 7, .rnr_retry = 7, .log_sra_max = 2});
    } else {
      AddQpToRts(s, {.qpn = qpn, .q_key = 0x11, .init_again = true, .log_msg_max = 30,
                     .next_send_psn = 1});
    }
    auto rts2 = prm::CommandIn<prm::rts2rts_qp_in>(prm::RTS2RTS_QP);
    rts2.set(prm::rts2rts_qp_in::qpn, qpn)
        .set(prm::rts2rts_qp_in::opt_param_mask,
             is_rc ? uint32_t{prm::QP_OPTPAR_RNR_TIMEOUT} : uint32_t{prm::QP_OPTPAR_Q_KEY});
    AddRaw(s, rts2.bytes(), 16);
    auto query = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
    query.set(prm::query_qp_in::qpn, qpn);
    AddRaw(s, query.bytes(), prm::size_bytes<prm::query_qp_out>);
    auto sqd = prm::CommandIn<prm::sqd2rts_qp_in>(prm::SQD_RTS_QP);  // not in SQD: BAD_QP_STATE
    sqd.set(prm::sqd2rts_qp_in::qpn, qpn);
    AddRaw(s, sqd.bytes(), 16);
    auto err = prm::CommandIn<prm::qp_2err_in>(prm::QP_2ERR);
    err.set(prm::qp_2err_in::qpn, qpn);
    AddRaw(s, err.bytes(), 16);
    auto rst = prm::CommandIn<prm::qp_2rst_in>(prm::QP_2RST);
    rst.set(prm::qp_2rst_in::qpn, qpn);
    AddRaw(s, rst.bytes(), 16);
  }
  // busy: UD uses it
  AddRaw(s, prm::CommandIn<prm::destroy_srq_in>(prm::DESTROY_SRQ).bytes(), 16);
  // busy: QPs use it
  AddRaw(s, prm::CommandIn<prm::destroy_cq_in>(prm::DESTROY_CQ).bytes(), 16);
  auto dq = prm::CommandIn<prm::destroy_qp_in>(prm::DESTROY_QP);
  dq.set(prm::destroy_qp_in::qpn, 3);
  AddRaw(s, dq.bytes(), 16);
  AddRaw(s, prm::CommandIn<prm::destroy_srq_in>(prm::DESTROY_SRQ).bytes(), 16);
  Write(dir, "raw_qps", s);
}

// Raw mode: an XRC domain, an XRC SRQ on a CQ, XRC initiator and target QPs, taken to RTS,
void WriteRawXrcSeed(const std::string& dir) {
   // armed and queried, torn down in order (the busy refusals first).
  std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
  constexpr uint32_t kUar = 8;
  constexpr uint32_t kPd = 1;
  constexpr uint32_t kXrcd = 1;  // the first domain
  AddEqAndCq(s, kUar);
  AddRaw(s, prm::CommandIn<prm::alloc_xrcd_in>(prm::ALLOC_XRCD).bytes(), 16);
  using X = prm::xrc_srqc_bits<prm::create_xrc_srq_in::xrc_srq_context_entry.bit_offset>;
  auto srq = prm::CommandIn<prm::create_xrc_srq_in>(prm::CREATE_XRC_SRQ, 0, 8);
  srq.set(X::log_xrc_srq_size, 6).set(X::log_rq_stride, 2).set(X::pd, kPd).set(X::xrcd, kXrcd)
      .set(X::cqn, 0).set(X::user_index_equal_xrc_srqn, 1)
      .set(X::db_record_addr_l, (kArenaIova + 0xf080) >> 2)
      .set(X::db_record_addr_h, (kArenaIova + 0xf080) >> 32)
      .set(prm::create_xrc_srq_in::pas[0], kArenaIova + 0xc000);
  AddRaw(s, srq.bytes(), 16);
  auto arm =
      prm::CommandIn<prm::arm_xrc_srq_in>(prm::ARM_XRC_SRQ, prm::ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ);
  arm.set(prm::arm_xrc_srq_in::lwm, 8);
  AddRaw(s, arm.bytes(), 16);
  AddRaw(s, prm::CommandIn<prm::query_xrc_srq_in>(prm::QUERY_XRC_SRQ).bytes(),
         prm::size_bytes<prm::query_xrc_srq_out> + 8);
  constexpr auto qpc = prm::create_qp_in::qpc;
  // qpn 2: 64 send blocks, one page
  auto ini = prm::CommandIn<prm::create_qp_in>(prm::CREATE_QP, 0, 8);
  ini.set(qpc.st, prm::QP_ST_XRC).set(qpc.pm_state, prm::QP_PM_MIGRATED).set(qpc.pd, kPd)
      .set(qpc.uar_page, kUar).set(qpc.rq_type, prm::ZERO_LEN_RQ).set(qpc.log_sq_size, 6)
      .set(qpc.dbr_addr, kArenaIova + 0xf040)
      .set(prm::create_qp_in::pas[0], kArenaIova + 0xa000);
  AddRaw(s, ini.bytes(), 16);
  auto tgt = prm::CommandIn<prm::create_qp_in>(prm::CREATE_QP);  // qpn 3: no ring, the domain
  tgt.set(qpc.st, prm::QP_ST_XRC).set(qpc.pm_state, prm::QP_PM_MIGRATED).set(qpc.no_sq, 1)
      .set(qpc.rq_type, prm::ZERO_LEN_RQ).set(qpc.xrcd, kXrcd);
  AddRaw(s, tgt.bytes(), 16);
  for (uint32_t qpn : {2u, 3u}) {
    // Each the other's peer.
    AddQpToRts(s, {.qpn = qpn, .remote_access = true, .remote_qpn = 5 - qpn, .log_rra_max = 2,
                   .path_port = 1, .retry_count = 7, .rnr_retry = 7});
    auto query = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
    query.set(prm::query_qp_in::qpn, qpn);
    AddRaw(s, query.bytes(), prm::size_bytes<prm::query_qp_out> + 8);
  }
  auto dealloc = prm::CommandIn<prm::dealloc_xrcd_in>(prm::DEALLOC_XRCD);
  dealloc.set(prm::dealloc_xrcd_in::xrcd, kXrcd);
  AddRaw(s, dealloc.bytes(), 16);  // busy: the SRQ and both QPs hold it
  AddRaw(s, prm::CommandIn<prm::destroy_srq_in>(prm::DESTROY_SRQ).bytes(), 16);  // the wrong kind
  for (uint32_t qpn : {2u, 3u}) {
    auto dq = prm::CommandIn<prm::destroy_qp_in>(prm::DESTROY_QP);
    dq.set(prm::destroy_qp_in::qpn, qpn);
    AddRaw(s, dq.bytes(), 16);
  }
  AddRaw(s, prm::CommandIn<prm::destroy_xrc_srq_in>(prm::DESTROY_XRC_SRQ).bytes(), 16);
  AddRaw(s, dealloc.bytes(), 16);
  Write(dir, "raw_xrc", s);
}

// Raw mode: a raw packet QP's objects (TIS, SQ, RQ, TIR) on a CQ, moved, queried, torn down.
void WriteRawEthQueuesSeed(const std::string& dir) {
  std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
  constexpr uint32_t kUar = 8;  // the object set's UAR, transport domain and PD
  constexpr uint32_t kTd = 1;
  constexpr uint32_t kPd = 1;
  AddEqAndCq(s, kUar);
  auto tis = prm::CommandIn<prm::create_tis_in>(prm::CREATE_TIS);
  tis.set(prm::tisc_bits<prm::create_tis_in::ctx.bit_offset>::transport_domain, kTd);
  AddRaw(s, tis.bytes(), 16);
  using SqC = prm::sqc_bits<prm::create_sq_in::ctx.bit_offset>;
  using SqW = prm::wq_bits<SqC::wq.bit_offset>;
  auto sq = prm::CommandIn<prm::create_sq_in>(prm::CREATE_SQ, 0, 8);  // 64 basic blocks: one page
  sq.set(SqC::flush_in_error_en, 1).set(SqC::tis_lst_sz, 1).set(SqC::tis_num_0, 1)
      .set(SqW::wq_type, prm::WQ_TYPE_CYCLIC).set(SqW::pd, kPd).set(SqW::uar_page, kUar)
      .set(SqW::dbr_addr, kArenaIova + 0xf040).set(SqW::log_wq_stride, 6)
      .set(SqW::log_wq_sz, 6)
      .set(prm::Element<64>{prm::create_sq_in::size_bits, "pas"}, kArenaIova + 0xa000);
  AddRaw(s, sq.bytes(), 16);
  using RqC = prm::rqc_bits<prm::create_rq_in::ctx.bit_offset>;
  using RqW = prm::wq_bits<RqC::wq.bit_offset>;
  auto rq = prm::CommandIn<prm::create_rq_in>(prm::CREATE_RQ, 0, 8);  // 16 x 64 B: one page
  rq.set(RqC::vsd, 1).set(RqW::wq_type, prm::WQ_TYPE_CYCLIC).set(RqW::pd, kPd)
      .set(RqW::dbr_addr, kArenaIova + 0xf040).set(RqW::log_wq_stride, 6)
      .set(RqW::log_wq_sz, 4)
      .set(prm::Element<64>{prm::create_rq_in::size_bits, "pas"}, kArenaIova + 0xb000);
  AddRaw(s, rq.bytes(), 16);
  // The SQ and RQ take QP numbers 2 and 3.
  using TirC = prm::tirc_bits<prm::create_tir_in::ctx.bit_offset>;
  auto tir = prm::CommandIn<prm::create_tir_in>(prm::CREATE_TIR);
  tir.set(TirC::inline_rqn, 3).set(TirC::transport_domain, kTd).set(TirC::self_lb_block, 2);
  AddRaw(s, tir.bytes(), 16);
  for (uint32_t next : {prm::SQC_STATE_RDY, prm::SQC_STATE_ERR, prm::SQC_STATE_RST}) {
    auto ms = prm::CommandIn<prm::modify_sq_in>(prm::MODIFY_SQ);
    ms.set(prm::modify_sq_in::sqn, 2)
        .set(prm::modify_sq_in::sq_state,
             next == prm::SQC_STATE_RDY ? prm::SQC_STATE_RST
             : next == prm::SQC_STATE_ERR ? prm::SQC_STATE_RDY : prm::SQC_STATE_ERR)
        .set(prm::sqc_bits<prm::modify_sq_in::ctx.bit_offset>::state, next);
    AddRaw(s, ms.bytes(), 16);
    auto mr = prm::CommandIn<prm::modify_rq_in>(prm::MODIFY_RQ);
    mr.set(prm::modify_rq_in::rqn, 3)
        .set(prm::modify_rq_in::rq_state,
             next == prm::RQC_STATE_RDY ? prm::RQC_STATE_RST
             : next == prm::RQC_STATE_ERR ? prm::RQC_STATE_RDY : prm::RQC_STATE_ERR)
        .set(prm::rqc_bits<prm::modify_rq_in::ctx.bit_offset>::state, next);
    AddRaw(s, mr.bytes(), 16);
  }
  auto qsq = prm::CommandIn<prm::query_sq_in>(prm::QUERY_SQ);
  qsq.set(prm::query_sq_in::sqn, 2);
  AddRaw(s, qsq.bytes(), prm::size_bytes<prm::query_sq_out> + 8);
  auto qrq = prm::CommandIn<prm::query_rq_in>(prm::QUERY_RQ);
  qrq.set(prm::query_rq_in::rqn, 3);
  AddRaw(s, qrq.bytes(), prm::size_bytes<prm::query_rq_out> + 8);
  auto qtir = prm::CommandIn<prm::query_tir_in>(prm::QUERY_TIR);
  qtir.set(prm::query_tir_in::tirn, 1);
  AddRaw(s, qtir.bytes(), prm::size_bytes<prm::query_tir_out>);
  auto qtis = prm::CommandIn<prm::query_tis_in>(prm::QUERY_TIS);
  qtis.set(prm::query_tis_in::tisn, 1);
  AddRaw(s, qtis.bytes(), prm::size_bytes<prm::query_tis_out>);
  auto drq = prm::CommandIn<prm::destroy_rq_in>(prm::DESTROY_RQ);
  drq.set(prm::destroy_rq_in::rqn, 3);
  AddRaw(s, drq.bytes(), 16);  // busy: the TIR dispatches to it
  auto dtis = prm::CommandIn<prm::destroy_tis_in>(prm::DESTROY_TIS);
  dtis.set(prm::destroy_tis_in::tisn, 1);
  AddRaw(s, dtis.bytes(), 16);  // busy: the SQ sends through it
  auto dtir = prm::CommandIn<prm::destroy_tir_in>(prm::DESTROY_TIR);
  dtir.set(prm::destroy_tir_in::tirn, 1);
  AddRaw(s, dtir.bytes(), 16);
  AddRaw(s, drq.bytes(), 16);
  auto dsq = prm::CommandIn<prm::destroy_sq_in>(prm::DESTROY_SQ);
  dsq.set(prm::destroy_sq_in::sqn, 2);
  AddRaw(s, dsq.bytes(), 16);
  AddRaw(s, dtis.bytes(), 16);
  Write(dir, "raw_eth_queues", s);
}

// Raw mode from cold: bring-up by hand, capabilities set.
void WriteRawBringupSeed(const std::string& dir) {
  std::vector<uint8_t> s = {kFlagRaw};
  AddRaw(s, prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16);
  auto set = prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, 0);
  AddRaw(s, set.bytes(), 16);
  auto reg = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, 0, 16);
  reg.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
  AddRaw(s, reg.bytes(), 32);
  AddRaw(s, prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::INIT_PAGES).bytes(), 16);
  AddRaw(s, prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA).bytes(), 16);
  AddRaw(s, prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16);
  Write(dir, "raw_bringup", s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <dir>\n");
    return 2;
  }
  const std::string dir = argv[1];
  WriteCmdqBringupSeed(dir);
  WriteCmdqResourcesSeed(dir);
  WriteRawResourcesSeed(dir);
  WriteRawQueuesSeed(dir);
  WriteRawQpsSeed(dir);
  WriteRawXrcSeed(dir);
  WriteRawEthQueuesSeed(dir);
  WriteRawBringupSeed(dir);
  return 0;
}
