// A test-side driver for the software ConnectX's data path, built on uapi/ only: it plays the
// driver's part through a CommandWriter (EQ, CQs, QPs, SRQ, mkeys by command) and writes WQEs,
// doorbell records and doorbells and reads CQEs exactly as the PRM lays them out.
//
// Memory: the top 2 MiB of the writer's DMA arena. 64 KiB for the EQ, 16 KiB per CQ (up to 8),
// 16 KiB per QP (up to 8), 16 KiB for an SRQ, 512 KiB of data under one MTT key, and doorbell
// records in the last page.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "tests/device/sim/cmd_writer.h"
#include "tests/device/wait.h"
#include "tools/sim/device.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/uar_page.h"
#include "uapi/vpci.h"

namespace onchip::sim::testing {

// mkc access bits a test asks a key for.
enum KeyRights : uint8_t {
  kLw = 1,
  kRr = 2,
  kRw = 4,
  kAtomic = 8,
  kBind = 16,
  kAll = kLw | kRr | kRw | kAtomic | kBind,
};

struct Cqe {
  prm::pod::mlx5_cqe64 good;
  prm::pod::mlx5_err_cqe err;
  uint8_t opcode() const { return prm::CqeOpcodeOf(good.op_own); }
  uint32_t byte_cnt() const { return good.byte_cnt.host(); }
  uint16_t wqe_counter() const { return good.wqe_counter.host(); }
  uint32_t qpn() const { return prm::CqeQpn(good.sop_drop_qpn.host()); }
  uint8_t wqe_opcode() const { return prm::CqeWqeOpcode(good.sop_drop_qpn.host()); }
  uint8_t syndrome() const { return err.syndrome; }
  bool solicited() const { return (good.op_own & prm::kCqeSolicitedBit) != 0; }
  uint64_t timestamp() const {
    return uint64_t{good.timestamp_h.host()} << 32 | good.timestamp_l.host();
  }
};

class Node {
 public:
  static constexpr uint64_t kBase = CommandWriter::kArenaIova + (6 << 20);
  static constexpr uint64_t kEqIova = kBase;
  static constexpr uint64_t kCqIova = kBase + 0x10000;
  static constexpr uint64_t kQpIova = kBase + 0x40000;
  static constexpr uint64_t kSrqIova = kBase + 0x80000;
  static constexpr uint64_t kDataIova = kBase + 0x100000;
  static constexpr uint64_t kDataBytes = 512 << 10;
  static constexpr uint64_t kDbrIova = CommandWriter::kArenaIova + (8 << 20) - 4096;
  // The virtual address the MTT key gives kDataIova.
  static constexpr uint64_t kDataVa = 0x5500'0000'0000;
  static constexpr uint32_t kLogCq = 7;
  static constexpr uint32_t kLogEq = 7;

  explicit Node(CommandWriter& w) : w_(w) {}

  // ENABLE_HCA .. INIT_HCA, 8-byte atomics in host byte order (as mlx5_core asks when the
  // device supports it) unless `host_order_atomics` is false, a UAR, a PD, an EQ (armed, on
  // interrupt vector 1).
  void Start(bool host_order_atomics = true) {
    // CommandWriter::BringUp's steps, with the capability set before INIT_HCA.
    Run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16);
    auto issi = prm::CommandIn<prm::set_issi_in>(prm::SET_ISSI);
    issi.set(prm::set_issi_in::current_issi, 1);
    Run(issi, 16);
    for (uint16_t op_mod : {prm::BOOT_PAGES, prm::INIT_PAGES}) {
      const auto n = static_cast<uint32_t>(
          Run(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, op_mod), 16)
              .get(prm::query_pages_out::num_pages));
      if (n) {
        auto given = w_.GivePages(n);
        ASSERT_TRUE(given && given->ok());
      }
    }
    if (host_order_atomics) {
      using SetAtomic = prm::atomic_caps_bits<prm::set_hca_cap_in::capability.bit_offset>;
      auto set =
          prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, prm::SetCapOpMod(prm::CAP_ATOMIC));
      set.set(SetAtomic::atomic_req_8B_endianness_mode, 1);
      Run(set, 16);
    }
    Run(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16);
    auto u = prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR);
    uar = static_cast<uint32_t>(Run(u, 16).get(prm::alloc_uar_out::uar));
    pd = AllocPd();
    using In = prm::create_eq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_EQ, 0, 8 * 2);
    in.set(In::eq_context_entry.log_eq_size, kLogEq)
        .set(In::eq_context_entry.uar_page, uar)
        .set(In::eq_context_entry.intr, 1)
        .set(In::eq_context_entry.st, prm::EQ_CQ_STATE_ARMED)
        .set(In::event_bitmask[0], (1u << prm::MLX5_EVENT_TYPE_COMP) |
                                       (1u << prm::MLX5_EVENT_TYPE_CQ_ERROR) |
                                       (1u << prm::MLX5_EVENT_TYPE_WQ_CATAS_ERROR) |
                                       (1u << prm::MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR) |
                                       (1u << prm::MLX5_EVENT_TYPE_WQ_ACCESS_ERROR))
        .set(In::pas[0], kEqIova)
        .set(In::pas[1], kEqIova + 4096);
    // Every EQE starts device-owned.
    for (uint32_t i = 0; i < (1u << kLogEq); ++i) w_.host(kEqIova)[i * 64 + 63] = std::byte{1};
    eqn = static_cast<uint32_t>(Run(in, 16).get(prm::create_eq_out::eq_number));
  }

  template <class M>
  Reply Run(const M& msg, std::size_t out_len) {
    auto r = w_.Run(msg.bytes(), out_len);
    EXPECT_TRUE(r) << r.error().describe();
    if (!r) return {};
    EXPECT_TRUE(r->ok()) << "status " << int(r->status) << " syndrome 0x" << std::hex
                         << r->syndrome;
    return *r;
  }

  uint32_t AllocPd() {
    auto in = prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD);
    return static_cast<uint32_t>(Run(in, 16).get(prm::alloc_pd_out::pd));
  }

  // ---- CQs ----
  struct CqInfo {
    uint32_t cqn = 0;
    uint64_t ring = 0;
    uint64_t dbr = 0;
    uint32_t ci = 0;
    uint32_t arm_sn = 0;
  };
  CqInfo NewCq(uint32_t slot) {
    CqInfo cq;
    cq.ring = kCqIova + slot * 0x4000;
    cq.dbr = kDbrIova + slot * 8;
    std::memset(w_.host(cq.ring), 0, 64 << kLogCq);
    for (uint32_t i = 0; i < (1u << kLogCq); ++i)
      w_.host(cq.ring)[i * 64 + 63] = std::byte{prm::kCqeInitialOpOwn};
    std::memset(w_.host(cq.dbr), 0, 8);
    using In = prm::create_cq_in;
    auto in = prm::CommandIn<In>(prm::CREATE_CQ, 0, 8 * 2);
    in.set(In::cq_context.log_cq_size, kLogCq)
        .set(In::cq_context.uar_page, uar)
        .set(In::cq_context.c_eqn_or_apu_element, eqn)
        .set(In::cq_context.dbr_addr, cq.dbr)
        .set(In::pas[0], cq.ring)
        .set(In::pas[1], cq.ring + 4096);
    cq.cqn = static_cast<uint32_t>(Run(in, 16).get(prm::create_cq_out::cqn));
    return cq;
  }
  // The next CQE, if the device has written it (consumes it and updates the CI record).
  std::optional<Cqe> TryPoll(CqInfo& cq) {
    const uint32_t size = 1u << kLogCq;
    std::byte* p = w_.host(cq.ring) + (cq.ci & (size - 1)) * 64;
    const auto op_own = std::to_integer<uint8_t>(
        std::atomic_ref<std::byte>(p[63]).load(std::memory_order_acquire));
    if (prm::CqeOpcodeOf(op_own) == prm::MLX5_CQE_INVALID ||
        prm::CqeOwner(op_own) != prm::CqeOwnerFor(cq.ci, size))
      return std::nullopt;
    Cqe c;
    std::memcpy(&c.good, p, 64);
    std::memcpy(&c.err, p, 64);
    ++cq.ci;
    StoreBe32(cq.dbr, cq.ci & prm::kCqConsumerIndexMask);
    return c;
  }
  std::optional<Cqe> Poll(CqInfo& cq, std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
    std::optional<Cqe> c;
    onchip::testing::WaitUntil([&] { return (c = TryPoll(cq)).has_value(); }, deadline);
    return c;
  }
  // EQE `index` of the EQ if the device has written it in its first pass over the ring (owner 0),
  // read as a consumer does: the owner byte with acquire, then the rest.
  std::optional<prm::pod::mlx5_eqe> PeekEqe(uint32_t index) {
    std::byte* p = w_.host(kEqIova) + index * 64;
    const auto owner = std::to_integer<uint8_t>(
        std::atomic_ref<std::byte>(p[63]).load(std::memory_order_acquire));
    if ((owner & 1) != 0) return std::nullopt;
    prm::pod::mlx5_eqe e;
    std::memcpy(&e, p, sizeof e);
    return e;
  }
  // Arms `cq` for its next completion as libmlx5 does: record, then the UAR doorbell.
  void Arm(CqInfo& cq, bool solicited_only = false) {
    const uint32_t word =
        prm::CqArmWord(cq.arm_sn, solicited_only ? prm::MLX5_CQ_DB_REQ_NOT_SOL : prm::MLX5_CQ_DB_REQ_NOT,
                       cq.ci);
    StoreBe32(cq.dbr + 4, word);
    prm::CqUarDoorbell db{prm::Be32::FromHost(word), prm::Be32::FromHost(cq.cqn)};
    uint64_t raw;
    std::memcpy(&raw, &db, 8);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(
                                  w_.bar() + prm::UarPageOffset(uar) + prm::MLX5_CQ_DOORBELL))
        .store(raw, std::memory_order_seq_cst);
    DoorbellRung();
  }

  // ---- QPs ----
  struct QpInfo {
    uint32_t qpn = 0;
    uint8_t st = 0;
    uint64_t buf = 0;
    uint64_t dbr = 0;
    uint32_t rq_count = 16;
    uint32_t rq_stride = 64;
    uint32_t sq_count = 64;  // basic blocks
    uint32_t sq_counter = 0;
    uint32_t rq_counter = 0;
    uint64_t sq_offset() const { return uint64_t{rq_count} * rq_stride; }
  };
  QpInfo NewQp(uint32_t slot, uint8_t st, uint32_t send_cqn, uint32_t recv_cqn,
               std::optional<uint32_t> srqn = std::nullopt, uint32_t qp_pd = ~0u) {
    QpInfo q;
    q.st = st;
    q.buf = kQpIova + slot * 0x4000;
    q.dbr = kDbrIova + 256 + slot * 8;
    if (srqn) q.rq_count = 0;
    std::memset(w_.host(q.buf), 0, 0x4000);
    std::memset(w_.host(q.dbr), 0, 8);
    using In = prm::create_qp_in;
    const uint64_t bytes = q.sq_offset() + uint64_t{q.sq_count} * 64;
    const uint32_t pages = static_cast<uint32_t>((bytes + 4095) / 4096);
    auto in = prm::CommandIn<In>(prm::CREATE_QP, 0, 8 * pages);
    in.set(In::qpc.st, st)
        .set(In::qpc.pm_state, prm::QP_PM_MIGRATED)
        .set(In::qpc.pd, qp_pd == ~0u ? pd : qp_pd)
        .set(In::qpc.uar_page, uar)
        .set(In::qpc.cqn_snd, send_cqn)
        .set(In::qpc.cqn_rcv, recv_cqn)
        .set(In::qpc.dbr_addr, q.dbr)
        .set(In::qpc.user_index, 0x100 + slot)
        .set(In::qpc.log_sq_size, 6);
    for (uint32_t i = 0; i < pages; ++i) in.set(In::pas[i], q.buf + i * 4096);
    if (srqn)
      in.set(In::qpc.rq_type, prm::SRQ_RQ).set(In::qpc.srqn_rmpn_xrqn, *srqn);
    else
      in.set(In::qpc.log_rq_size, 4).set(In::qpc.log_rq_stride, 2);
    q.qpn = static_cast<uint32_t>(Run(in, 16).get(prm::create_qp_out::qpn));
    return q;
  }

  struct Path {
    uint32_t remote_qpn = 0;
    std::array<uint8_t, 16> rgid{};
    // InfiniBand: the peer's LID, and whether the path carries a GRH (RoCE ignores both).
    uint16_t rlid = 0;
    bool grh = false;
    uint8_t src_addr_index = 3;
    uint8_t rnr_retry = 7;
    uint8_t retry_count = 7;
    uint8_t min_rnr_nak = 1;  // 10 us
    uint8_t ack_timeout = 14;
    uint32_t psn = 0x123;  // both directions
  };
  using Ctx = prm::qpc_bits<prm::rst2init_qp_in::qpc.bit_offset>;
  // RST -> INIT -> RTR -> RTS with `path` (RC and UC), or the UD steps.
  void Connect(const QpInfo& q, const Path& path) {
    {
      auto in = prm::CommandIn<prm::rst2init_qp_in>(prm::RST2INIT_QP);
      in.set(prm::rst2init_qp_in::qpn, q.qpn)
          .set(Ctx::primary_address_path.vhca_port_num, 1);
      if (q.st == prm::QP_ST_RC) in.set(Ctx::rre, 1).set(Ctx::rwe, 1).set(Ctx::rae, 1);
      if (q.st == prm::QP_ST_UC) in.set(Ctx::rwe, 1);
      if (q.st == prm::QP_ST_UD) in.set(Ctx::q_key, kQkey);
      Run(in, 16);
    }
    {
      auto in = prm::CommandIn<prm::init2rtr_qp_in>(prm::INIT2RTR_QP);
      in.set(prm::init2rtr_qp_in::qpn, q.qpn).set(Ctx::mtu, 5).set(Ctx::log_msg_max, 30);
      if (q.st != prm::QP_ST_UD) {
        in.set(Ctx::remote_qpn, path.remote_qpn)
            .set(Ctx::next_rcv_psn, path.psn)
            .set(Ctx::primary_address_path.vhca_port_num, 1)
            .set(Ctx::primary_address_path.src_addr_index, path.src_addr_index)
            .set(Ctx::primary_address_path.rlid, path.rlid)
            .set(Ctx::primary_address_path.grh, path.grh ? 1 : 0)
            .set(Ctx::primary_address_path.hop_limit, 64)
            .set(Ctx::primary_address_path.udp_sport, 0xc001);
        for (int i = 0; i < 16; ++i) in.set(Ctx::primary_address_path.rgid_rip[i], path.rgid[i]);
      }
      if (q.st == prm::QP_ST_RC) in.set(Ctx::log_rra_max, 4).set(Ctx::min_rnr_nak, path.min_rnr_nak);
      Run(in, 16);
    }
    {
      auto in = prm::CommandIn<prm::rtr2rts_qp_in>(prm::RTR2RTS_QP);
      in.set(prm::rtr2rts_qp_in::qpn, q.qpn).set(Ctx::next_send_psn, path.psn);
      if (q.st == prm::QP_ST_RC)
        in.set(Ctx::retry_count, path.retry_count)
            .set(Ctx::rnr_retry, path.rnr_retry)
            .set(Ctx::log_sra_max, 4)
            .set(Ctx::primary_address_path.ack_timeout, path.ack_timeout);
      Run(in, 16);
    }
  }
  // Connects a to b and b to a through `gid` (a GID of the device both are on); each path's
  // other fields (timeouts, retry counts) as given, or Path's defaults.
  void ConnectPair(const QpInfo& a, const QpInfo& b, const std::array<uint8_t, 16>& gid) {
    ConnectPair(a, b, gid, Path{}, Path{});
  }
  void ConnectPair(const QpInfo& a, const QpInfo& b, const std::array<uint8_t, 16>& gid,
                   Path to_b, Path to_a) {
    to_b.remote_qpn = b.qpn;
    to_b.rgid = gid;
    to_a.remote_qpn = a.qpn;
    to_a.rgid = gid;
    Connect(a, to_b);
    Connect(b, to_a);
  }
  uint32_t QpState(uint32_t qpn) {
    auto in = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
    in.set(prm::query_qp_in::qpn, qpn);
    return static_cast<uint32_t>(
        Run(in, prm::size_bytes<prm::query_qp_out>).get(prm::query_qp_out::qpc.state));
  }
  void ToError(uint32_t qpn) {
    auto in = prm::CommandIn<prm::qp_2err_in>(prm::QP_2ERR);
    in.set(prm::qp_2err_in::qpn, qpn);
    Run(in, 16);
  }
  // To RST, and the rings' counters and doorbell record back to 0, as libmlx5 does when the
  // QP is reset: its next WQE is index 0 again.
  void ToReset(QpInfo& q) {
    auto in = prm::CommandIn<prm::qp_2rst_in>(prm::QP_2RST);
    in.set(prm::qp_2rst_in::qpn, q.qpn);
    Run(in, 16);
    q.sq_counter = q.rq_counter = 0;
    StoreBe32(q.dbr, 0);
    StoreBe32(q.dbr + 4, 0);
  }

  // ---- keys ----
  // An MTT key over the data area (kDataVa .. + kDataBytes) with `rights` (local read always).
  uint32_t MttKey(uint8_t rights, uint32_t key_pd = ~0u) {
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    const uint32_t pages = kDataBytes / 4096;
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 8 * pages);
    SetKeyCommon(in, prm::MKC_ACCESS_MODE_MTT, rights, key_pd);
    in.set(mkc.start_addr, kDataVa)
        .set(mkc.len, kDataBytes)
        .set(mkc.log_page_size, 12)
        .set(mkc.translations_octword_size, pages / 2)
        .set(In::translations_octword_actual_size, pages / 2);
    prm::Bits b(in.bytes().subspan(prm::size_bytes<In>));
    for (uint32_t i = 0; i < pages; ++i) b.set(prm::Element<64>{i * 64, "mtt"}, kDataIova + i * 4096);
    return KeyOf(Run(in, 16));
  }
  // A MEMIC allocation of `bytes` and a zero-based key over it; `bar_offset` is where its bytes
  // lie in BAR0.
  uint32_t MemicKey(uint32_t bytes, uint8_t rights, uint64_t* bar_offset) {
    auto a = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    a.set(prm::alloc_memic_in::range_start_addr, w_.device().layout().memic_start)
        .set(prm::alloc_memic_in::range_size, w_.device().layout().memic_size)
        .set(prm::alloc_memic_in::memic_size, bytes)
        .set(prm::alloc_memic_in::log_memic_addr_alignment, 0);
    const uint64_t start = Run(a, 16).get(prm::alloc_memic_out::memic_start_addr);
    *bar_offset = start;
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY);
    SetKeyCommon(in, prm::MKC_ACCESS_MODE_MEMIC, rights, ~0u);
    in.set(mkc.start_addr, start).set(mkc.len, bytes);
    return KeyOf(Run(in, 16));
  }
  // A memory window (type 1 or 2), free, on this node's PD.
  uint32_t Window(int type) {
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY);
    in.set(mkc.access_mode_1_0, prm::MKC_ACCESS_MODE_KLMS & 3)
        .set(mkc.access_mode_4_2, prm::MKC_ACCESS_MODE_KLMS >> 2)
        .set(mkc.qpn, 0xffffff)
        .set(mkc.free, 1)
        .set(mkc.umr_en, 1)
        .set(mkc.en_rinval, type == 2 ? 1 : 0)
        .set(mkc.translations_octword_size, 4)
        .set(mkc.pd, pd)
        .set(mkc.mkey_7_0, 0x11);
    return static_cast<uint32_t>(Run(in, 16).get(prm::create_mkey_out::mkey_index)) << 8 | 0x11;
  }

  std::byte* Data(uint64_t va) { return w_.host(kDataIova + (va - kDataVa)); }
  std::byte* Bar(uint64_t offset) { return w_.bar() + offset; }

  // ---- posting ----
  // Writes a send WQE (ctrl + `segments`) at the QP's producer index, then the doorbell record,
  // then the 8-byte doorbell, then kicks the device only if its engine said it sleeps.
  uint16_t PostSend(QpInfo& q, uint8_t opcode, std::span<const std::byte> segments,
                    uint8_t fm_ce_se = prm::MLX5_WQE_CTRL_CQ_UPDATE, uint32_t imm_raw = 0,
                    bool kick = true, std::optional<uint32_t> ds_override = std::nullopt) {
    const WrittenWqe w = WriteSendWqe(q, opcode, segments, fm_ce_se, imm_raw, ds_override);
    RingSend(w);
    if (kick) DoorbellRung();
    return w.index;
  }
  // A send WQE written with its doorbell record but not rung: its index and its first 8 bytes
  // (what the UAR doorbell carries).
  struct WrittenWqe {
    uint16_t index = 0;
    uint64_t first8 = 0;
  };
  // The WQE at the QP's producer index, then the doorbell record: everything a post writes
  // before the UAR doorbell. The device does not start it until the doorbell (RingSend).
  WrittenWqe WriteSendWqe(QpInfo& q, uint8_t opcode, std::span<const std::byte> segments,
                          uint8_t fm_ce_se = prm::MLX5_WQE_CTRL_CQ_UPDATE, uint32_t imm_raw = 0,
                          std::optional<uint32_t> ds_override = std::nullopt) {
    const uint32_t bytes = 16 + static_cast<uint32_t>(segments.size());
    const uint32_t ds = ds_override.value_or((bytes + 15) / 16);
    const uint32_t bbs = (bytes + 63) / 64;
    std::vector<std::byte> wqe(bbs * 64);
    prm::pod::mlx5_wqe_ctrl_seg ctrl{};
    const uint16_t index = static_cast<uint16_t>(q.sq_counter);
    ctrl.opmod_idx_opcode = prm::Be32::FromHost(prm::OpmodIdxOpcode(0, index, opcode));
    ctrl.qpn_ds = prm::Be32::FromHost(prm::QpnDs(q.qpn, ds));
    ctrl.fm_ce_se = fm_ce_se;
    ctrl.imm = prm::Be32::FromRaw(imm_raw);
    std::memcpy(wqe.data(), &ctrl, 16);
    if (!segments.empty()) std::memcpy(wqe.data() + 16, segments.data(), segments.size());
    for (uint32_t i = 0; i < bbs; ++i) {
      const uint32_t slot = (q.sq_counter + i) & (q.sq_count - 1);
      std::memcpy(w_.host(q.buf + q.sq_offset() + slot * 64), wqe.data() + i * 64, 64);
    }
    q.sq_counter = (q.sq_counter + bbs) & 0xffff;
    StoreBe32(q.dbr + 4, q.sq_counter);
    WrittenWqe w{.index = index};
    std::memcpy(&w.first8, wqe.data(), 8);
    return w;
  }
  // The 8-byte send doorbell: the WQE's first 8 bytes stored to half `half` of bfreg `bfreg` of
  // the node's UAR page (bf_reg_size 512, the default).
  void RingSend(const WrittenWqe& w, uint32_t bfreg = 0, uint32_t half = 0) {
    const uint64_t offset = prm::UarPageOffset(uar) + prm::BfregOffset(bfreg, 512) +
                            half * prm::BfregHalfBytes(512);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(w_.bar() + offset))
        .store(w.first8, std::memory_order_seq_cst);
  }
  // One scatter entry (and a terminator when the stride has room) at the RQ's producer index.
  void PostRecv(QpInfo& q, uint32_t lkey, uint64_t addr, uint32_t len) {
    std::byte* wqe = w_.host(q.buf + (q.rq_counter & (q.rq_count - 1)) * q.rq_stride);
    std::memset(wqe, 0, q.rq_stride);
    prm::pod::mlx5_wqe_data_seg d{prm::Be32::FromHost(len), prm::Be32::FromHost(lkey),
                                  prm::Be64::FromHost(addr)};
    std::memcpy(wqe, &d, sizeof d);
    prm::pod::mlx5_wqe_data_seg end{prm::Be32::FromHost(0), prm::Be32::FromHost(prm::MLX5_INVALID_LKEY),
                                    prm::Be64::FromHost(0)};
    std::memcpy(wqe + 16, &end, sizeof end);
    ++q.rq_counter;
    StoreBe32(q.dbr, q.rq_counter & 0xffff);
    DoorbellRung();
  }
  // What the driver's DoorbellRung does: the doorbell visible, then the sleep word read, and a
  // Kick only if the engine sleeps. (A seq_cst read-modify-write of the word is both the barrier
  // and the read here; the sim bus uses MFENCE and a load.)
  void DoorbellRung() {
    const uint32_t word = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(
                                                        w_.bar() + vpci::kEngineSleepWordOffset))
                              .fetch_or(0, std::memory_order_seq_cst);
    if (word != 0) {
      ++kicks;
      w_.device().Kick();
    }
  }

  void StoreBe32(uint64_t iova, uint32_t v) {
    const uint32_t raw = prm::Be32::FromHost(v).raw();
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(w_.host(iova)))
        .store(raw, std::memory_order_release);
  }

  static constexpr uint32_t kQkey = 0x11223344;
  CommandWriter& w_;
  uint32_t uar = 0, pd = 0, eqn = 0;
  uint64_t kicks = 0;

 private:
  template <class M>
  void SetKeyCommon(M& in, uint8_t mode, uint8_t rights, uint32_t key_pd) {
    constexpr auto mkc = prm::create_mkey_in::memory_key_mkey_entry;
    in.set(mkc.access_mode_1_0, mode & 3)
        .set(mkc.access_mode_4_2, mode >> 2)
        .set(mkc.qpn, 0xffffff)
        .set(mkc.lr, 1)
        .set(mkc.lw, (rights & kLw) ? 1 : 0)
        .set(mkc.rr, (rights & kRr) ? 1 : 0)
        .set(mkc.rw, (rights & kRw) ? 1 : 0)
        .set(mkc.a, (rights & kAtomic) ? 1 : 0)
        .set(mkc.umr_en, (rights & kBind) ? 1 : 0)
        .set(mkc.pd, key_pd == ~0u ? pd : key_pd)
        .set(mkc.mkey_7_0, 0x5c);
  }
  static uint32_t KeyOf(const Reply& r) {
    return static_cast<uint32_t>(r.get(prm::create_mkey_out::mkey_index)) << 8 | 0x5c;
  }
};

// Segment builders.
inline std::vector<std::byte> DataSeg(uint32_t lkey, uint64_t addr, uint32_t len) {
  prm::pod::mlx5_wqe_data_seg d{prm::Be32::FromHost(len), prm::Be32::FromHost(lkey),
                                prm::Be64::FromHost(addr)};
  std::vector<std::byte> v(sizeof d);
  std::memcpy(v.data(), &d, sizeof d);
  return v;
}
inline std::vector<std::byte> RaddrSeg(uint64_t raddr, uint32_t rkey) {
  prm::pod::mlx5_wqe_raddr_seg r{prm::Be64::FromHost(raddr), prm::Be32::FromHost(rkey),
                                 prm::Be32::FromHost(0)};
  std::vector<std::byte> v(sizeof r);
  std::memcpy(v.data(), &r, sizeof r);
  return v;
}
inline std::vector<std::byte> AtomicSeg(uint64_t swap_add, uint64_t compare) {
  prm::pod::mlx5_wqe_atomic_seg a{prm::Be64::FromHost(swap_add), prm::Be64::FromHost(compare)};
  std::vector<std::byte> v(sizeof a);
  std::memcpy(v.data(), &a, sizeof a);
  return v;
}
inline std::vector<std::byte> InlineSeg(std::span<const std::byte> data) {
  std::vector<std::byte> v((4 + data.size() + 15) / 16 * 16);
  const uint32_t bc = prm::Be32::FromHost(prm::MLX5_INLINE_SEG | static_cast<uint32_t>(data.size())).raw();
  std::memcpy(v.data(), &bc, 4);
  std::memcpy(v.data() + 4, data.data(), data.size());
  return v;
}
inline std::vector<std::byte> Cat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

}  // namespace onchip::sim::testing
