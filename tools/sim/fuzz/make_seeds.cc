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
#include "uapi/prm/resources.h"
#include "uapi/prm/sw_icm.h"

namespace {

using namespace onchip;
using onchip::sim::fuzz::kArenaBytes;
using onchip::sim::fuzz::kArenaIova;

template <class L>
prm::Message<L> Cmd(uint16_t opcode, uint16_t op_mod = 0, std::size_t extra = 0) {
  prm::Message<L> m(extra);
  m.set(L::opcode, opcode).set(L::op_mod, op_mod);
  return m;
}

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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <dir>\n");
    return 2;
  }
  const std::string dir = argv[1];
  using namespace onchip::sim::fuzz;

  {  // Bring-up commands through the queue, from a cold device.
    Arena a;
    std::size_t blk = 0;
    Encode(a, 0, Cmd<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16, blk);
    Encode(a, 1, Cmd<prm::query_issi_in>(prm::QUERY_ISSI).bytes(), 112, blk);
    Encode(a, 2, Cmd<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 0x1f).bytes(), 4112, blk);
    Encode(a, 3, Cmd<prm::query_pages_in>(prm::QUERY_PAGES, prm::BOOT_PAGES).bytes(), 16, blk);
    Write(dir, "cmdq_bringup", CmdqSeed(0, 0xf, a, 4096 + 1024 * blk));
  }
  {  // Resource commands through the queue on an initialized HCA with objects.
    Arena a;
    std::size_t blk = 0;
    Encode(a, 0, Cmd<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16, blk);
    auto memic = Cmd<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    memic.set(prm::alloc_memic_in::memic_size, 128)
        .set(prm::alloc_memic_in::range_start_addr, 0x80000)
        .set(prm::alloc_memic_in::range_size, 0x40000);
    Encode(a, 1, memic.bytes(), 16, blk);
    using In = prm::create_mkey_in;
    constexpr auto mkc = In::memory_key_mkey_entry;
    auto mtt = Cmd<In>(prm::CREATE_MKEY, 0, 32);
    mtt.set(mkc.access_mode_1_0, 1).set(mkc.qpn, 0xffffff).set(mkc.pd, 1).set(mkc.umr_en, 1)
        .set(mkc.len, 8192).set(mkc.log_page_size, 12).set(mkc.translations_octword_size, 2)
        .set(In::translations_octword_actual_size, 2);
    Encode(a, 2, mtt.bytes(), 16, blk);
    auto q = Cmd<prm::query_mkey_in>(prm::QUERY_MKEY);
    q.set(prm::query_mkey_in::mkey_index, 1);
    Encode(a, 3, q.bytes(), prm::size_bytes<prm::query_mkey_out>, blk);
    auto d = Cmd<prm::dealloc_pd_in>(prm::DEALLOC_PD);
    d.set(prm::dealloc_pd_in::pd, 1);
    Encode(a, 4, d.bytes(), 16, blk);
    Write(dir, "cmdq_resources", CmdqSeed(kFlagBringUp | kFlagObjects, 0x1f, a, 4096 + 1024 * blk));
  }
  {  // Raw mode: every resource command once, valid, on an initialized HCA with objects.
    std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
    AddRaw(s, Cmd<prm::alloc_uar_in>(prm::ALLOC_UAR).bytes(), 16);
    auto du = Cmd<prm::dealloc_uar_in>(prm::DEALLOC_UAR);
    du.set(prm::dealloc_uar_in::uar, 8);
    AddRaw(s, du.bytes(), 16);
    AddRaw(s, Cmd<prm::alloc_transport_domain_in>(prm::ALLOC_TRANSPORT_DOMAIN).bytes(), 16);
    auto dm = Cmd<prm::dealloc_memic_in>(prm::DEALLOC_MEMIC);
    dm.set(prm::dealloc_memic_in::memic_start_addr, 0x80000)
        .set(prm::dealloc_memic_in::memic_size, 4096);
    AddRaw(s, dm.bytes(), 16);
    auto dk = Cmd<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
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
    auto take = Cmd<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_TAKE);
    take.set(prm::manage_pages_in::input_num_entries, 4);
    AddRaw(s, take.bytes(), 48);
    auto force = Cmd<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
    force.set(prm::teardown_hca_in::profile, 1);
    AddRaw(s, force.bytes(), 16);
    Write(dir, "raw_resources", s);
  }
  {  // Raw mode: an EQ and a CQ on it in the arena, queried, moderated, destroyed in order.
    std::vector<uint8_t> s = {kFlagBringUp | kFlagObjects | kFlagRaw};
    constexpr uint32_t kUar = 8;  // the UAR the object set allocates first
    auto eq = Cmd<prm::create_eq_in>(prm::CREATE_EQ, 0, 8);
    eq.set(prm::create_eq_in::eq_context_entry.log_eq_size, 6)  // 4 KiB: one page
        .set(prm::create_eq_in::eq_context_entry.uar_page, kUar)
        .set(prm::create_eq_in::event_bitmask[0], 1)
        .set(prm::create_eq_in::pas[0], kArenaIova + 0x8000);
    AddRaw(s, eq.bytes(), 16);
    auto qe = Cmd<prm::query_eq_in>(prm::QUERY_EQ);
    AddRaw(s, qe.bytes(), 280);
    auto cq = Cmd<prm::create_cq_in>(prm::CREATE_CQ, 0, 8);
    cq.set(prm::create_cq_in::cq_context.log_cq_size, 6)
        .set(prm::create_cq_in::cq_context.uar_page, kUar)
        .set(prm::create_cq_in::cq_context.dbr_addr, kArenaIova + 0xf000)
        .set(prm::create_cq_in::pas[0], kArenaIova + 0x9000);
    AddRaw(s, cq.bytes(), 16);
    auto qc = Cmd<prm::query_cq_in>(prm::QUERY_CQ);
    AddRaw(s, qc.bytes(), 280);
    auto mc = Cmd<prm::modify_cq_in>(prm::MODIFY_CQ);
    mc.set(prm::modify_cq_in::modify_field_select_resize_field_select, prm::CQ_MODIFY_PERIOD)
        .set(prm::cqc_bits<prm::modify_cq_in::cq_context.bit_offset>::cq_period, 16);
    AddRaw(s, mc.bytes(), 16);
    auto de = Cmd<prm::destroy_eq_in>(prm::DESTROY_EQ);
    AddRaw(s, de.bytes(), 16);  // busy: the CQ reports to it
    AddRaw(s, Cmd<prm::destroy_cq_in>(prm::DESTROY_CQ).bytes(), 16);
    AddRaw(s, de.bytes(), 16);
    Write(dir, "raw_queues", s);
  }
  {  // Raw mode from cold: bring-up by hand, capabilities set.
    std::vector<uint8_t> s = {kFlagRaw};
    AddRaw(s, Cmd<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16);
    auto set = Cmd<prm::set_hca_cap_in>(prm::SET_HCA_CAP, 0);
    AddRaw(s, set.bytes(), 16);
    auto reg = Cmd<prm::access_register_in>(prm::ACCESS_REG, 0, 16);
    reg.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
    AddRaw(s, reg.bytes(), 32);
    AddRaw(s, Cmd<prm::query_pages_in>(prm::QUERY_PAGES, prm::INIT_PAGES).bytes(), 16);
    AddRaw(s, Cmd<prm::init_hca_in>(prm::INIT_HCA).bytes(), 16);
    AddRaw(s, Cmd<prm::nop_in>(prm::NOP).bytes(), 16);
    Write(dir, "raw_bringup", s);
  }
  return 0;
}
