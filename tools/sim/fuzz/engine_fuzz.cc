#include "tools/sim/fuzz/engine_fuzz.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include <unistd.h>

#include "tools/sim/bar.h"
#include "tools/sim/engine.h"
#include "tools/sim/firmware.h"
#include "tools/sim/fuzz/direct_bring_up.h"
#include "tools/sim/iommu.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim::fuzz {
namespace {

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "engine fuzz: %s\n", what);
  std::abort();
}

// Where things sit in the DMA arena (IOVA kArena + offset).
constexpr uint64_t kArena = 0x100000;
constexpr std::size_t kArenaBytes = 128 << 10;
constexpr uint64_t kEq = 0x0000;        // 128 EQEs, 2 pages
constexpr uint64_t kCq = 0x2000;        // CQ i at + i * 0x1000: 64 CQEs
constexpr uint64_t kQp = 0x4000;        // QP i at + i * 0x2000: RQ 16 x 64 B, SQ 16 blocks
constexpr uint64_t kSrq = 0xe000;       // 16 x 64 B
constexpr uint64_t kDbr = 0xf000;       // CQ i at + i * 8, QP i at + 64 + i * 8, SRQ at + 128
constexpr uint64_t kData = 0x10000;     // 64 KiB under one MTT key, VA = IOVA
constexpr std::size_t kQueueArea = 0x10000;
constexpr uint64_t kPagesIova = 0x4000'0000;
constexpr int kQps = 5;  // 0-1 RC pair, 2-3 UD pair, 4 RC on the SRQ (connected to itself)

struct Harness {
  DeviceConfig config;
  Bar0 bar;
  Iommu iommu;
  std::vector<std::byte> arena_storage = std::vector<std::byte>(kArenaBytes + 4096);
  std::vector<std::byte> pages_storage;
  Contexts contexts;
  EngineState engine_state;
  Firmware firmware;
  Engine engine;
  uint32_t uar = 0, pd = 0, eqn = 0, srqn = 0;
  bool quiet_timers = false;
  std::array<uint32_t, 2> cqn{};
  std::array<uint32_t, kQps> qpn{};
  std::array<uint32_t, kQps> sq_counter{};
  std::array<uint32_t, 4> keys{};  // MTT, MEMIC, window, garbage

  explicit Harness(Bar0 b)
      : bar(std::move(b)),
        pages_storage((config.boot_pages + config.init_pages + 1) * 4096),
        contexts(config, bar.layout()),
        firmware(contexts, EngineStateControl(engine_state), config, bar.layout(), bar.Memic(),
                 bar.SteeringTags(), iommu),
        engine(ContextsView(contexts), engine_state, MkeyServices(firmware), iommu, bar, config,
               [] {}, std::chrono::steady_clock::now()) {}

  static std::byte* Align(std::vector<std::byte>& v) {
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<std::byte*>((p + 4095) & ~uintptr_t{4095});
  }
  std::byte* arena() { return Align(arena_storage); }

  template <class M>
  std::vector<std::byte> Must(const M& m, std::size_t out_len, const char* what) {
    std::vector<std::byte> out(out_len);
    if (!firmware.Execute(m.bytes(), out).ok()) Broken(what);
    return out;
  }
  template <class F>
  static uint64_t Get(const std::vector<std::byte>& out, F f) {
    return prm::Get(std::span<const std::byte>(out), f);
  }

  void Setup(const EngineFuzzOptions& options) {
    const HostMemory memory = options.memory;
    quiet_timers = options.quiet_timers;
    const uint32_t n = config.boot_pages + config.init_pages;
    auto map = [&](uint64_t iova, uint64_t length, std::byte* host) {
      if (memory == HostMemory::kPointer) return iommu.Map({iova, length, host, -1, 0});
      return iommu.MapProcess(iova, length, getpid(), reinterpret_cast<uint64_t>(host));
    };
    if (!map(kArena, kArenaBytes, arena())) Broken("map arena");
    if (!map(kPagesIova, uint64_t{n} * 4096, Align(pages_storage))) Broken("map pages");
    const auto hca = BringUpDirect(firmware, kPagesIova, n);
    if (!hca) Broken("bring-up");
    uar = hca->uar;
    pd = hca->pd;
    for (int i = 0; i < 128; ++i) arena()[kEq + i * 64 + 63] = std::byte{1};
    {
      using In = prm::create_eq_in;
      auto in = prm::CommandIn<In>(prm::CREATE_EQ, 0, 16);
      in.set(In::eq_context_entry.log_eq_size, 7)
          .set(In::eq_context_entry.uar_page, uar)
          .set(In::eq_context_entry.st, prm::EQ_CQ_STATE_ARMED)
          .set(In::event_bitmask[0], 0x11)
          .set(In::pas[0], kArena + kEq)
          .set(In::pas[1], kArena + kEq + 4096);
      eqn = static_cast<uint32_t>(Get(Must(in, 16, "EQ"), prm::create_eq_out::eq_number));
    }
    for (int i = 0; i < 2; ++i) {
      for (int e = 0; e < 64; ++e) arena()[kCq + i * 0x1000 + e * 64 + 63] = std::byte{0xf0};
      using In = prm::create_cq_in;
      auto in = prm::CommandIn<In>(prm::CREATE_CQ, 0, 8);
      in.set(In::cq_context.log_cq_size, 6)
          .set(In::cq_context.uar_page, uar)
          .set(In::cq_context.c_eqn_or_apu_element, eqn)
          .set(In::cq_context.dbr_addr, kArena + kDbr + i * 8)
          .set(In::pas[0], kArena + kCq + i * 0x1000);
      cqn[i] = static_cast<uint32_t>(Get(Must(in, 16, "CQ"), prm::create_cq_out::cqn));
    }
    {
      using In = prm::create_srq_in;
      using S = prm::srqc_bits<In::srq_context_entry.bit_offset>;
      auto in = prm::CommandIn<In>(prm::CREATE_SRQ, 0, 8);
      in.set(S::log_srq_size, 4).set(S::log_rq_stride, 2).set(S::pd, pd)
          .set(S::dbr_addr, kArena + kDbr + 128).set(In::pas[0], kArena + kSrq);
      srqn = static_cast<uint32_t>(Get(Must(in, 16, "SRQ"), prm::create_srq_out::srqn));
      for (uint32_t i = 0; i < 16; ++i) {
        prm::Bits(std::span(arena() + kSrq + i * 64, 16))
            .set(prm::mlx5_wqe_srq_next_seg::next_wqe_index, (i + 1) & 15);
      }
    }
    Keys();
    const uint8_t st[kQps] = {prm::QP_ST_RC, prm::QP_ST_RC, prm::QP_ST_UD, prm::QP_ST_UD, prm::QP_ST_RC};
    for (int i = 0; i < kQps; ++i) {
      using In = prm::create_qp_in;
      const bool srq = i == 4;
      auto in = prm::CommandIn<In>(prm::CREATE_QP, 0, 8);
      in.set(In::qpc.st, st[i])
          .set(In::qpc.pm_state, prm::QP_PM_MIGRATED)
          .set(In::qpc.pd, pd)
          .set(In::qpc.uar_page, uar)
          .set(In::qpc.cqn_snd, cqn[i & 1])
          .set(In::qpc.cqn_rcv, cqn[(i + 1) & 1])
          .set(In::qpc.dbr_addr, kArena + kDbr + 64 + i * 8)
          .set(In::qpc.log_sq_size, 4)
          .set(In::pas[0], kArena + kQp + i * 0x2000);
      if (srq)
        in.set(In::qpc.rq_type, prm::SRQ_RQ).set(In::qpc.srqn_rmpn_xrqn, srqn);
      else
        in.set(In::qpc.log_rq_size, 4).set(In::qpc.log_rq_stride, 2);
      qpn[i] = static_cast<uint32_t>(Get(Must(in, 16, "QP"), prm::create_qp_out::qpn));
    }
    const uint32_t peer[kQps] = {qpn[1], qpn[0], 0, 0, qpn[4]};
    for (int i = 0; i < kQps; ++i) Connect(qpn[i], st[i], peer[i]);
  }

  void Keys() {
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto common = [&](prm::Message<In>& in, uint8_t mode, uint8_t variant) {
      in.set(mkc.access_mode_1_0, mode & 3).set(mkc.access_mode_4_2, mode >> 2)
          .set(mkc.qpn, 0xffffff).set(mkc.lr, 1).set(mkc.lw, 1).set(mkc.rr, 1).set(mkc.rw, 1)
          .set(mkc.a, 1).set(mkc.pd, pd).set(mkc.mkey_7_0, variant);
    };
    constexpr uint32_t pages = 16;
    auto mtt = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 8 * pages);
    common(mtt, prm::MKC_ACCESS_MODE_MTT, 0x21);
    mtt.set(mkc.umr_en, 1).set(mkc.start_addr, kArena + kData).set(mkc.len, pages * 4096)
        .set(mkc.log_page_size, 12).set(mkc.translations_octword_size, pages / 2)
        .set(In::translations_octword_actual_size, pages / 2);
    prm::Bits mb(mtt.bytes().subspan(prm::size_bytes<In>));
    for (uint32_t i = 0; i < pages; ++i) mb.set(prm::Element<64>{i * 64, "mtt"}, kArena + kData + i * 4096);
    keys[0] = static_cast<uint32_t>(Get(Must(mtt, 16, "MTT key"), prm::create_mkey_out::mkey_index)) << 8 | 0x21;
    auto memic = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    memic.set(prm::alloc_memic_in::memic_size, 4096)
        .set(prm::alloc_memic_in::range_start_addr, bar.layout().memic_start)
        .set(prm::alloc_memic_in::range_size, bar.layout().memic_size);
    const uint64_t start = Get(Must(memic, 16, "MEMIC"), prm::alloc_memic_out::memic_start_addr);
    auto dm = prm::CommandIn<In>(prm::CREATE_MKEY);
    common(dm, prm::MKC_ACCESS_MODE_MEMIC, 0x22);
    dm.set(mkc.start_addr, start).set(mkc.len, 4096);
    keys[1] = static_cast<uint32_t>(Get(Must(dm, 16, "MEMIC key"), prm::create_mkey_out::mkey_index)) << 8 | 0x22;
    auto mw = prm::CommandIn<In>(prm::CREATE_MKEY);
    common(mw, prm::MKC_ACCESS_MODE_KLMS, 0x23);
    mw.set(mkc.free, 1).set(mkc.umr_en, 1).set(mkc.en_rinval, 1).set(mkc.translations_octword_size, 4);
    keys[2] = static_cast<uint32_t>(Get(Must(mw, 16, "window"), prm::create_mkey_out::mkey_index)) << 8 | 0x23;
    keys[3] = 0xdeadbe00;
  }

  void Connect(uint32_t qp, uint8_t st, uint32_t remote) {
    using Ctx = prm::qpc_bits<prm::rst2init_qp_in::qpc.bit_offset>;
    auto a = prm::CommandIn<prm::rst2init_qp_in>(prm::RST2INIT_QP);
    a.set(prm::rst2init_qp_in::qpn, qp).set(Ctx::primary_address_path.vhca_port_num, 1);
    if (st == prm::QP_ST_RC) a.set(Ctx::rre, 1).set(Ctx::rwe, 1).set(Ctx::rae, 1);
    if (st == prm::QP_ST_UD) a.set(Ctx::q_key, 0x1234);
    Must(a, 16, "RST2INIT");
    auto b = prm::CommandIn<prm::init2rtr_qp_in>(prm::INIT2RTR_QP);
    b.set(prm::init2rtr_qp_in::qpn, qp).set(Ctx::mtu, 5).set(Ctx::log_msg_max, 30);
    if (st == prm::QP_ST_RC) {
      const Gid gid = engine.gids()[3];
      b.set(Ctx::remote_qpn, remote).set(Ctx::next_rcv_psn, 7).set(Ctx::log_rra_max, 4)
          .set(Ctx::min_rnr_nak, quiet_timers ? 0 : 1)
          .set(Ctx::primary_address_path.vhca_port_num, 1)
          .set(Ctx::primary_address_path.src_addr_index, 3)
          .set(Ctx::primary_address_path.hop_limit, 64);
      for (int i = 0; i < 16; ++i) b.set(Ctx::primary_address_path.rgid_rip[i], gid[i]);
    }
    Must(b, 16, "INIT2RTR");
    auto c = prm::CommandIn<prm::rtr2rts_qp_in>(prm::RTR2RTS_QP);
    c.set(prm::rtr2rts_qp_in::qpn, qp).set(Ctx::next_send_psn, 7);
    if (st == prm::QP_ST_RC)
      c.set(Ctx::retry_count, 1).set(Ctx::rnr_retry, 1).set(Ctx::log_sra_max, 4)
          .set(Ctx::primary_address_path.ack_timeout, quiet_timers ? 0 : 1);
    Must(c, 16, "RTR2RTS");
  }

  void StoreBe32(uint64_t offset, uint32_t v) {
    const uint32_t raw = prm::Be32::FromHost(v).raw();
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(arena() + offset)).store(raw);
  }
};

struct Reader {
  const uint8_t* data;
  std::size_t size;
  std::size_t pos = 0;
  bool more() const { return pos < size; }
  uint8_t u8() { return pos < size ? data[pos++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  uint32_t u32() { return uint32_t{u16()} << 16 | u16(); }
  uint64_t u64() { return uint64_t{u32()} << 32 | u32(); }
};

}  // namespace

EngineFuzzResult FuzzEngine(const uint8_t* data, std::size_t size,
                            const EngineFuzzOptions& options) {
  EngineFuzzResult result;
  auto bar = Bar0::Create(DeviceConfig{});
  if (!bar) Broken("bar0");
  Harness h(std::move(*bar));
  h.Setup(options);
  Reader in{data, size};
  while (in.more()) {
    switch (in.u8() % 6) {
      case 0: {
        const uint64_t offset = in.u16() % kQueueArea;
        const std::size_t n = std::min<std::size_t>(in.u8(), kQueueArea - offset);
        for (std::size_t i = 0; i < n; ++i) h.arena()[offset + i] = std::byte{in.u8()};
        break;
      }
      case 1: {
        const int q = in.u8() % kQps;
        const uint8_t opcode = in.u8();
        const uint8_t fm_ce_se = in.u8();
        const uint8_t ds = in.u8() & 0x3f;
        const uint8_t key_mask = in.u8();
        std::array<std::byte, 64> wqe{};
        prm::pod::mlx5_wqe_ctrl_seg ctrl{};
        ctrl.opmod_idx_opcode =
            prm::Be32::FromHost(prm::OpmodIdxOpcode(0, static_cast<uint16_t>(h.sq_counter[q]), opcode));
        ctrl.qpn_ds = prm::Be32::FromHost(prm::QpnDs(h.qpn[q], ds));
        ctrl.fm_ce_se = fm_ce_se;
        ctrl.imm = prm::Be32::FromHost(h.keys[fm_ce_se & 3]);
        std::memcpy(wqe.data(), &ctrl, sizeof ctrl);
        for (std::size_t i = 16; i < wqe.size(); ++i) wqe[i] = std::byte{in.u8()};
        for (int s = 1; s < 4; ++s) {
          if (!(key_mask >> s & 1)) continue;
          std::byte* seg = wqe.data() + s * 16;
          const uint32_t key = h.keys[std::to_integer<uint8_t>(seg[0]) & 3];
          const bool device = (key & 0xff) == 0x22;
          const uint64_t va = device ? (std::to_integer<uint64_t>(seg[1]) << 4)
                                     : kArena + kData + (std::to_integer<uint64_t>(seg[1]) << 8);
          const auto bkey = prm::Be32::FromHost(key);
          const auto bva = prm::Be64::FromHost(va);
          if (key_mask & 1) {  // a remote address segment
            std::memcpy(seg, &bva, 8);
            std::memcpy(seg + 8, &bkey, 4);
          } else {  // a data segment
            seg[0] = std::byte{0};
            std::memcpy(seg + 4, &bkey, 4);
            std::memcpy(seg + 8, &bva, 8);
          }
        }
        // The WQE's first block at the producer index; the rest of a long WQE is whatever the
        // ring holds.
        std::memcpy(h.arena() + kQp + q * 0x2000 + 1024 + (h.sq_counter[q] & 15) * 64, wqe.data(), 64);
        h.sq_counter[q] = (h.sq_counter[q] + std::max(1, (ds * 16 + 63) / 64)) & 0xffff;
        h.StoreBe32(kDbr + 64 + q * 8 + 4, h.sq_counter[q]);
        ++result.wqes;
        break;
      }
      case 2: {
        static constexpr uint64_t kWords[] = {kDbr, kDbr + 4, kDbr + 8, kDbr + 12, kDbr + 128};
        const uint8_t which = in.u8();
        const uint64_t at = which < 5 ? kWords[which] : kDbr + 64 + (which % (2 * kQps)) * 4;
        h.StoreBe32(at, in.u32());
        break;
      }
      case 3: {
        static constexpr uint64_t kRegs[] = {prm::MLX5_CQ_DOORBELL, prm::kEqDoorbellArm,
                                             prm::kEqDoorbellUpdateCi};
        const uint64_t reg = kRegs[in.u8() % 3];
        const uint64_t v = in.u64();
        std::byte* p = h.bar.base() + prm::UarPageOffset(h.uar) + reg;
        if (reg == prm::MLX5_CQ_DOORBELL)
          std::memcpy(p, &v, 8);
        else
          std::memcpy(p, &v, 4);
        break;
      }
      case 4:
        h.engine.Pass();
        ++result.passes;
        break;
      case 5: {
        auto e = prm::CommandIn<prm::qp_2err_in>(prm::QP_2ERR);
        e.set(prm::qp_2err_in::qpn, h.qpn[in.u8() % kQps]);
        std::vector<std::byte> out(16);
        h.firmware.Execute(e.bytes(), out);
        break;
      }
    }
  }
  for (int i = 0; i < 4; ++i, ++result.passes) h.engine.Pass();
  if (const char* broken = h.firmware.CheckInvariants()) Broken(broken);
  // What the device produced, as QUERY_CQ / QUERY_QP report it.
  for (uint32_t cq : h.cqn) {
    auto q = prm::CommandIn<prm::query_cq_in>(prm::QUERY_CQ);
    q.set(prm::query_cq_in::cqn, cq);
    std::vector<std::byte> out(prm::size_bytes<prm::query_cq_out> + 64);
    if (!h.firmware.Execute(q.bytes(), out).ok()) Broken("QUERY_CQ");
    result.cqes += static_cast<int>(
        prm::Get(std::span<const std::byte>(out), prm::cqc_bits<prm::query_cq_out::cq_context.bit_offset>::producer_counter));
  }
  for (uint32_t qp : h.qpn) {
    auto q = prm::CommandIn<prm::query_qp_in>(prm::QUERY_QP);
    q.set(prm::query_qp_in::qpn, qp);
    std::vector<std::byte> out(prm::size_bytes<prm::query_qp_out>);
    if (!h.firmware.Execute(q.bytes(), out).ok()) Broken("QUERY_QP");
    if (prm::Get(std::span<const std::byte>(out), prm::query_qp_out::qpc.state) == prm::QP_STATE_ERR)
      ++result.errors;
  }
  return result;
}

}  // namespace onchip::sim::fuzz
