#include "tools/sim/fuzz/firmware_fuzz.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/sim/bar.h"
#include "tools/sim/command_queue.h"
#include "tools/sim/firmware.h"
#include "tools/sim/iommu.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/sw_icm.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim::fuzz {
namespace {

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "firmware fuzz: invariant broken: %s\n", what);
  std::abort();
}

struct Harness {
  DeviceConfig config;
  Bar0 bar;
  Iommu iommu;
  std::vector<std::byte> arena;
  std::vector<std::byte> user_arena;  // mapped for kUserUid
  Contexts contexts;
  EngineState engine_state;  // no engine runs: the firmware's queries read it as created
  Firmware firmware;
  CommandQueue queue;
  int commands = 0;

  explicit Harness(Bar0 b)
      : bar(std::move(b)),
        arena(kArenaBytes + kPageSlack),
        user_arena(kArenaBytes + kPageSlack),
        contexts(config, bar.layout()),
        firmware(contexts, EngineStateControl(engine_state), config, bar.layout(), bar.Memic(),
                 bar.SteeringTags(), iommu),
        queue(bar, iommu, firmware, config) {}

  static constexpr std::size_t kPageSlack = 4096;
  static std::byte* PageAligned(std::vector<std::byte>& v) {
    auto p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<std::byte*>((p + 4095) & ~uintptr_t{4095});
  }
  std::byte* arena_base() { return PageAligned(arena); }
  std::byte* user_arena_base() { return PageAligned(user_arena); }

  std::vector<std::byte> Run(std::span<const std::byte> in, std::size_t out_len) {
    std::vector<std::byte> out(out_len);
    firmware.Execute(in, out);
    ++commands;
    return out;
  }

  void BringUp() {
    Run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16);
    auto issi = prm::CommandIn<prm::set_issi_in>(prm::SET_ISSI);
    issi.set(prm::set_issi_in::current_issi, 1);
    Run(issi.bytes(), 16);
    const uint32_t n = config.boot_pages + config.init_pages;
    auto give = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8 * n);
    give.set(prm::manage_pages_in::input_num_entries, n);
    for (uint32_t i = 0; i < n; ++i)
      give.set(prm::manage_pages_in::pas[i], kPagesIova + uint64_t{i} * 4096);
    Run(give.bytes(), 16);
    Run(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA).bytes(), 16);
  }

  void CreateObjects() {
    Run(prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR).bytes(), 16);
    Run(prm::CommandIn<prm::alloc_transport_domain_in>(prm::ALLOC_TRANSPORT_DOMAIN).bytes(), 16);
    auto pd_out = Run(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16);
    const uint64_t pd = prm::Get(std::span<const std::byte>(pd_out), prm::alloc_pd_out::pd);
    auto memic = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    memic.set(prm::alloc_memic_in::memic_size, 4096)
        .set(prm::alloc_memic_in::range_start_addr, bar.layout().memic_start)
        .set(prm::alloc_memic_in::range_size, bar.layout().memic_size);
    auto m_out = Run(memic.bytes(), 16);
    const uint64_t memic_addr =
        prm::Get(std::span<const std::byte>(m_out), prm::alloc_memic_out::memic_start_addr);
    using C = prm::create_sw_icm_in;
    prm::Message<C> icm;
    icm.set(C::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
        .set(C::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
        .set(C::sw_icm.log_sw_icm_size, 12)
        .set(C::sw_icm.sw_icm_start_addr, uint64_t{1} << 40);
    Run(icm.bytes(), 16);
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto mk = [&](uint8_t mode, uint64_t start, uint64_t len) {
      auto in = prm::CommandIn<In>(prm::CREATE_MKEY);
      in.set(mkc.access_mode_1_0, mode & 3)
          .set(mkc.access_mode_4_2, mode >> 2)
          .set(mkc.qpn, 0xffffff)
          .set(mkc.lr, 1)
          .set(mkc.pd, pd)
          .set(mkc.start_addr, start)
          .set(mkc.len, len);
      return in;
    };
    auto pa = mk(prm::MKC_ACCESS_MODE_PA, 0, 0);
    pa.set(mkc.length64, 1);
    auto pa_out = Run(pa.bytes(), 16);
    Run(mk(prm::MKC_ACCESS_MODE_MEMIC, memic_addr, 4096).bytes(), 16);
    Run(mk(prm::MKC_ACCESS_MODE_SW_ICM, uint64_t{1} << 40, 4096).bytes(), 16);
    auto mw = mk(prm::MKC_ACCESS_MODE_KLMS, 0, 0);
    mw.set(mkc.free, 1).set(mkc.umr_en, 1).set(mkc.translations_octword_size, 4);
    Run(mw.bytes(), 16);
    const uint64_t pa_idx =
        prm::Get(std::span<const std::byte>(pa_out), prm::create_mkey_out::mkey_index);
    auto klm = mk(prm::MKC_ACCESS_MODE_KLMS, 0, 4096);
    auto klm_in = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 16);
    std::memcpy(klm_in.bytes().data(), klm.bytes().data(), klm.bytes().size());
    klm_in.set(mkc.translations_octword_size, 1).set(In::translations_octword_actual_size, 1);
    prm::Bits(klm_in.bytes().subspan(prm::size_bytes<In>))
        .set(prm::mlx5_klm::bcount, 4096)
        .set(prm::mlx5_klm::key, pa_idx << 8);
    Run(klm_in.bytes(), 16);
  }

  static constexpr uint64_t kPagesIova = 0x4000'0000;
  std::vector<std::byte> pages = std::vector<std::byte>(4096 * 96 + 4096);
};

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }

}  // namespace

FuzzResult FuzzFirmware(const uint8_t* data, std::size_t size) {
  FuzzResult result;
  if (size < 1) return result;
  const uint8_t flags = data[0];
  auto bar = Bar0::Create(DeviceConfig{});
  if (!bar) Broken("bar0");
  Harness h(std::move(*bar));
  // The arena, and pages for MANAGE_PAGES, are the only host memory the device may touch.
  if (!h.iommu.Map({kArenaIova, kArenaBytes, h.arena_base(), -1, 0})) Broken("map arena");
  if (!h.iommu.Map({kUserArenaIova, kArenaBytes, h.user_arena_base(), -1, 0}, kUserUid))
    Broken("map user arena");
  if (size > 1) std::memcpy(h.user_arena_base(), data + 1, std::min(size - 1, kArenaBytes));
  auto pages_base = reinterpret_cast<uintptr_t>(h.pages.data());
  auto* pages = reinterpret_cast<std::byte*>((pages_base + 4095) & ~uintptr_t{4095});
  if (!h.iommu.Map({Harness::kPagesIova, 4096 * 96, pages, -1, 0})) Broken("map pages");

  if (flags & kFlagBringUp) h.BringUp();
  if ((flags & kFlagBringUp) && (flags & kFlagObjects)) h.CreateObjects();

  if (flags & kFlagRaw) {
    std::size_t pos = 1;
    while (pos + 4 <= size) {
      const std::size_t in_len = Be16(data + pos);
      const std::size_t out_len = Be16(data + pos + 2);
      pos += 4;
      const std::size_t n = std::min(in_len, size - pos);
      std::vector<std::byte> in(n);
      if (n) std::memcpy(in.data(), data + pos, n);
      pos += n;
      h.Run(in, out_len);
    }
  } else if (size >= 5) {
    const uint32_t doorbell = (uint32_t{data[1]} << 24) | (uint32_t{data[2]} << 16) |
                              (uint32_t{data[3]} << 8) | data[4];
    const std::size_t n = std::min(size - 5, kArenaBytes);
    if (n) std::memcpy(h.arena_base(), data + 5, n);
    // Program the queue and ring, as a driver would.
    std::byte* b = h.bar.base();
    auto store = [&](std::size_t bit_offset, uint32_t v) {
      v = std::byteswap(v);
      std::memcpy(b + bit_offset / 32 * 4, &v, 4);
    };
    store(prm::initial_seg::cmdq_phy_addr_63_32.bit_offset, kArenaIova >> 32);
    store(prm::initial_seg::cmdq_phy_addr_31_12.bit_offset, static_cast<uint32_t>(kArenaIova));
    store(prm::initial_seg::command_doorbell_vector.bit_offset, doorbell);
    const uint64_t before = h.firmware.counters().commands;
    result.completed = h.queue.Poll();
    h.commands += static_cast<int>(h.firmware.counters().commands - before);
  }
  if (const char* broken = h.firmware.CheckInvariants()) Broken(broken);
  result.commands = h.commands;
  return result;
}

}  // namespace onchip::sim::fuzz

