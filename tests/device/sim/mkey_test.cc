// CREATE/DESTROY/QUERY_MKEY: every access mode, memory windows, TPH, PD and parent checks.
#include <cstring>
#include <vector>

#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/sw_icm.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_mkey_in;
constexpr auto mkc = In::memory_key_mkey_entry;
using QMkc = prm::mkc_bits<prm::query_mkey_out::memory_key_mkey_entry.bit_offset>;

class MkeyTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    pd_ = AllocPd(0);
  }
  uint32_t AllocPd(uint16_t uid) {
    auto in = prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD);
    in.set(prm::alloc_pd_in::uid, uid);
    return static_cast<uint32_t>(Exec(in, 16).get(prm::alloc_pd_out::pd));
  }
  static prm::Message<In> Mkey(uint8_t mode, uint32_t pd, std::size_t octowords = 0) {
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 16 * octowords);
    in.set(mkc.access_mode_1_0, mode & 3)
        .set(mkc.access_mode_4_2, mode >> 2)
        .set(mkc.qpn, 0xffffff)
        .set(mkc.lr, 1)
        .set(mkc.lw, 1)
        .set(mkc.pd, pd)
        .set(mkc.mkey_7_0, 0x5c);
    return in;
  }
  Reply Destroy(uint32_t index, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
    in.set(prm::destroy_mkey_in::mkey_index, index).set(prm::destroy_mkey_in::uid, uid);
    return Exec(in, 16);
  }
  Reply Query(uint32_t index) {
    auto in = prm::CommandIn<prm::query_mkey_in>(prm::QUERY_MKEY);
    in.set(prm::query_mkey_in::mkey_index, index);
    return Exec(in, prm::size_bytes<prm::query_mkey_out>);
  }
  static uint32_t Index(const Reply& r) {
    return static_cast<uint32_t>(r.get(prm::create_mkey_out::mkey_index));
  }
  // A populated MTT mkey over `pages` 4 KiB pages at iova 0x10000.
  Reply Mtt(uint32_t pages, uint32_t pd) {
    const std::size_t octo = (pages + 1) / 2;
    auto in = Mkey(prm::MKC_ACCESS_MODE_MTT, pd, octo);
    in.set(mkc.umr_en, 1)
        .set(mkc.start_addr, 0x10000)
        .set(mkc.len, uint64_t{pages} * 4096)
        .set(mkc.log_page_size, 12)
        .set(mkc.translations_octword_size, octo)
        .set(In::translations_octword_actual_size, octo);
    prm::Bits b(in.bytes().subspan(prm::size_bytes<In>));
    for (uint32_t i = 0; i < pages; ++i)
      b.set(prm::Element<64>{i * 64, "mtt"}, 0x2'0000'0000 + i * 4096 + 3);
    return Exec(in, 16);
  }
  uint32_t pd_ = 0;
};

TEST_F(MkeyTest, MttMkeyIsKeptAndQueryable) {
  auto r = Mtt(3, pd_);
  ASSERT_TRUE(Ok(r));
  const uint32_t idx = Index(r);
  EXPECT_NE(idx, 0u);
  EXPECT_EQ(sim_->counters().mkeys, 1u);
  auto q = Query(idx);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QMkc::access_mode_1_0), 1u);
  EXPECT_EQ(q.get(QMkc::pd), pd_);
  EXPECT_EQ(q.get(QMkc::mkey_7_0), 0x5cu);
  EXPECT_EQ(q.get(QMkc::len), 3u * 4096);
  EXPECT_EQ(q.get(QMkc::start_addr), 0x10000u);
  EXPECT_EQ(q.get(QMkc::umr_en), 1u);
  EXPECT_EQ(q.get(prm::query_mkey_out::bsf0_klm0_pas_mtt0_1[7]), 3u);  // low byte of MTT 0
  ASSERT_TRUE(Ok(Destroy(idx)));
  EXPECT_TRUE(Refused(Destroy(idx), CommandStatus::BAD_RES_ERR, Syndrome::MKEY_UNKNOWN));
  EXPECT_TRUE(Refused(Query(idx), CommandStatus::BAD_RES_ERR, Syndrome::MKEY_UNKNOWN));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

// The MTT is read in entries of 2^log_page_size bytes: a key over 3 MiB starting 4 KiB into a
// 2 MiB page needs two 2 MiB entries, and a byte lands at entry[(va >> 21) - (start >> 21)] plus
// va's offset inside its 2 MiB page, through the IOMMU.
TEST_F(MkeyTest, MttTranslationHonoursLogPageSize) {
  constexpr uint64_t kMiB2 = uint64_t{2} << 20;
  constexpr uint64_t kIova = 0x40'0000'0000;  // 2 MiB aligned
  constexpr uint64_t kStart = 0x7f00'0020'1000;
  constexpr uint64_t kLen = 3 << 20;
  std::vector<std::byte> host(2 * kMiB2 + 4096);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(host.data()) + 4095) & ~uintptr_t{4095});
  ASSERT_TRUE(sim_->MapDma({.iova = kIova, .length = 2 * kMiB2, .host = base}));

  auto in = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, 1);
  in.set(mkc.start_addr, kStart).set(mkc.len, kLen).set(mkc.log_page_size, 21)
      .set(mkc.translations_octword_size, 1).set(In::translations_octword_actual_size, 1);
  prm::Bits list(in.bytes().subspan(prm::size_bytes<In>));
  list.set(prm::Element<64>{0, "mtt"}, kIova + 3);  // bits 1:0: the entry's rights
  list.set(prm::Element<64>{64, "mtt"}, kIova + kMiB2 + 3);
  auto r = Exec(in, 16);
  ASSERT_TRUE(Ok(r));
  const uint32_t key = Index(r) << 8 | 0x5c;
  EXPECT_EQ(Query(Index(r)).get(QMkc::log_page_size), 21u);

  Firmware& fw = sim_->firmware();
  EXPECT_EQ(fw.MkeyBusAddress(key, kStart), kIova + 0x1000);
  EXPECT_EQ(fw.MkeyBusAddress(key, kStart + kMiB2), kIova + kMiB2 + 0x1000);
  EXPECT_EQ(fw.MkeyBusAddress(key, kStart + kLen - 1), kIova + 0x1000 + kLen - 1);
  EXPECT_FALSE(fw.MkeyBusAddress(key, kStart + kLen));  // past the key
  EXPECT_FALSE(fw.MkeyBusAddress(key, kStart - 1));
  EXPECT_FALSE(fw.MkeyBusAddress(key ^ 1, kStart));     // wrong key byte
  // Eight bytes across the boundary of the two entries land where the host expects them.
  const uint64_t va = (kStart & ~(kMiB2 - 1)) + kMiB2 - 4;
  const std::byte bytes[8] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                              std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  ASSERT_TRUE(fw.WriteMkeyHost(key, va, bytes));
  EXPECT_EQ(std::memcmp(base + kMiB2 - 4, bytes, sizeof bytes), 0);
  std::byte back[8] = {};
  ASSERT_TRUE(fw.ReadMkeyHost(key, va, back));
  EXPECT_EQ(std::memcmp(back, bytes, sizeof bytes), 0);
  EXPECT_FALSE(fw.WriteMkeyHost(key, kStart + kLen - 4, bytes));  // runs past the key

  // The same memory as 4 KiB entries: one entry per page, same bytes.
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  const uint64_t pages = (kStart + kLen - (kStart & ~uint64_t{4095}) + 4095) / 4096;
  auto small = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, (pages + 1) / 2);
  small.set(mkc.start_addr, kStart).set(mkc.len, kLen).set(mkc.log_page_size, 12)
      .set(mkc.translations_octword_size, (pages + 1) / 2)
      .set(In::translations_octword_actual_size, (pages + 1) / 2);
  prm::Bits small_list(small.bytes().subspan(prm::size_bytes<In>));
  for (uint64_t i = 0; i < pages; ++i)
    small_list.set(prm::Element<64>{i * 64, "mtt"}, kIova + 0x1000 + i * 4096);
  auto s4k = Exec(small, 16);
  ASSERT_TRUE(Ok(s4k));
  const uint32_t key4k = Index(s4k) << 8 | 0x5c;
  EXPECT_EQ(fw.MkeyBusAddress(key4k, va), kIova + kMiB2 - 4);
  std::byte again[8] = {};
  ASSERT_TRUE(fw.ReadMkeyHost(key4k, va, again));
  EXPECT_EQ(std::memcmp(again, bytes, sizeof bytes), 0);
  ASSERT_TRUE(Ok(Destroy(Index(s4k))));
  ASSERT_TRUE(sim_->UnmapDma(kIova, 2 * kMiB2));
}

TEST_F(MkeyTest, MttRules) {
  auto few = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, 1);
  few.set(mkc.start_addr, 0x10000).set(mkc.len, 3 * 4096).set(mkc.log_page_size, 12)
      .set(mkc.translations_octword_size, 1).set(In::translations_octword_actual_size, 1);
  EXPECT_TRUE(Refused(Exec(few, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_TRANSLATIONS));
  auto small_page = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, 1);
  small_page.set(mkc.len, 2048).set(mkc.log_page_size, 11)
      .set(mkc.translations_octword_size, 1).set(In::translations_octword_actual_size, 1);
  EXPECT_TRUE(Refused(Exec(small_page, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_PAGE_SIZE));
  auto unaligned = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, 1);
  unaligned.set(mkc.len, 4096).set(mkc.log_page_size, 12)
      .set(mkc.translations_octword_size, 1).set(In::translations_octword_actual_size, 1);
  prm::Bits(unaligned.bytes().subspan(prm::size_bytes<In>))
      .set(prm::Element<64>{0, "mtt"}, 0x2'0000'0800);
  EXPECT_TRUE(Refused(Exec(unaligned, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_MTT_ENTRY));
  // translations_octword_actual_size beyond the message.
  auto lie = Mkey(prm::MKC_ACCESS_MODE_MTT, pd_, 0);
  lie.set(mkc.len, 4096).set(mkc.log_page_size, 12)
      .set(mkc.translations_octword_size, 4).set(In::translations_octword_actual_size, 4);
  EXPECT_TRUE(Refused(Exec(lie, 16), CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(MkeyTest, PaModeIsForUidZeroAndLength64) {
  auto pa = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  pa.set(mkc.length64, 1);
  auto r = Exec(pa, 16);
  ASSERT_TRUE(Ok(r));
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  pa.set(mkc.len, 4096);
  EXPECT_TRUE(Refused(Exec(pa, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_LENGTH));
  const uint32_t user_pd = AllocPd(3);
  auto user = Mkey(prm::MKC_ACCESS_MODE_PA, user_pd);
  user.set(In::uid, 3).set(mkc.len, 4096);
  EXPECT_TRUE(Refused(Exec(user, 16), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MKEY_PA_NOT_PRIVILEGED));
}

TEST_F(MkeyTest, MemoryWindowsType1AndType2) {
  for (int type = 1; type <= 2; ++type) {
    auto mw = Mkey(prm::MKC_ACCESS_MODE_KLMS, pd_);
    mw.set(mkc.free, 1).set(mkc.umr_en, 1).set(mkc.translations_octword_size, 4)
        .set(mkc.en_rinval, type == 2 ? 1 : 0);
    auto r = Exec(mw, 16);
    ASSERT_TRUE(Ok(r));
    auto q = Query(Index(r));
    EXPECT_EQ(q.get(QMkc::free), 1u);
    EXPECT_EQ(q.get(QMkc::umr_en), 1u);
    EXPECT_EQ(q.get(QMkc::en_rinval), type == 2 ? 1u : 0u);
    EXPECT_EQ(q.get(QMkc::access_mode_1_0), 2u);
    EXPECT_EQ(q.get(QMkc::translations_octword_size), 4u);
    ASSERT_TRUE(Ok(Destroy(Index(r))));
  }
  auto stuck = Mkey(prm::MKC_ACCESS_MODE_KLMS, pd_);
  stuck.set(mkc.free, 1).set(mkc.translations_octword_size, 4);
  EXPECT_TRUE(Refused(Exec(stuck, 16), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MKEY_FREE_WITHOUT_UMR));
}

TEST_F(MkeyTest, KlmMkeyHoldsTheMkeysItNames) {
  const uint32_t target = Index(Mtt(2, pd_));
  auto klm = Mkey(prm::MKC_ACCESS_MODE_KLMS, pd_, 1);
  klm.set(mkc.len, 8192).set(mkc.translations_octword_size, 1)
      .set(In::translations_octword_actual_size, 1);
  prm::Bits list(klm.bytes().subspan(prm::size_bytes<In>));
  list.set(prm::Element<32>{0, "byte_count"}, 8192)
      .set(prm::Element<32>{32, "mkey"}, (target << 8) | 0x5c)
      .set(prm::Element<64>{64, "address"}, 0x10000);
  auto r = Exec(klm, 16);
  ASSERT_TRUE(Ok(r));
  EXPECT_TRUE(Refused(Destroy(target), CommandStatus::RES_BUSY, Syndrome::MKEY_BUSY));
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  ASSERT_TRUE(Ok(Destroy(target)));
  // A KLM naming nothing.
  EXPECT_TRUE(Refused(Exec(klm, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_KLM_ENTRY));
}

TEST_F(MkeyTest, MemicMkeyMustLieInOneAllocationWhichItHolds) {
  auto a = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
  a.set(prm::alloc_memic_in::memic_size, 4096)
      .set(prm::alloc_memic_in::range_start_addr, sim_->layout().memic_start)
      .set(prm::alloc_memic_in::range_size, sim_->layout().memic_size);
  const uint64_t off = Exec(a, 16).get(prm::alloc_memic_out::memic_start_addr);
  auto m = Mkey(prm::MKC_ACCESS_MODE_MEMIC, pd_);
  m.set(mkc.start_addr, off + 64).set(mkc.len, 4096 - 64).set(mkc.rw, 1).set(mkc.rr, 1);
  auto r = Exec(m, 16);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(Query(Index(r)).get(QMkc::start_addr), off + 64);
  // What the CPU stores through its BAR mapping is what the mkey reaches.
  w_->bar()[off + 64 + 10] = std::byte{0xa5};
  const uint32_t key = (Index(r) << 8) | 0x5c;
  auto bytes = sim_->firmware().MkeyDeviceMemory(key, 10, 1);
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[0], std::byte{0xa5});
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(key ^ 1, 10, 1));  // wrong variant
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(key, 4096 - 64, 1));  // past the mkey
  auto dealloc = prm::CommandIn<prm::dealloc_memic_in>(prm::DEALLOC_MEMIC);
  dealloc.set(prm::dealloc_memic_in::memic_start_addr, off)
      .set(prm::dealloc_memic_in::memic_size, 4096);
  EXPECT_TRUE(Refused(Exec(dealloc, 16), CommandStatus::RES_BUSY, Syndrome::MEMIC_BUSY));
  m.set(mkc.len, 4096);  // one byte... 64 bytes past the end
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_MEMIC_RANGE));
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  ASSERT_TRUE(Ok(Exec(dealloc, 16)));
  m.set(mkc.len, 64);
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_MEMIC_RANGE));
}

TEST_F(MkeyTest, SwIcmMkeyMustLieInOneOwnedObjectWhichItHolds) {
  using C = prm::create_sw_icm_in;
  const uint64_t addr = uint64_t{1} << 40;  // the steering area
  prm::Message<C> c;
  c.set(C::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
      .set(C::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(C::sw_icm.log_sw_icm_size, 16)
      .set(C::sw_icm.sw_icm_start_addr, addr);
  const uint32_t obj =
      static_cast<uint32_t>(Exec(c, 16).get(prm::general_obj_out_cmd_hdr::obj_id));
  auto m = Mkey(prm::MKC_ACCESS_MODE_SW_ICM, pd_);
  m.set(mkc.start_addr, addr + 4096).set(mkc.len, 8192).set(mkc.rw, 1);
  auto r = Exec(m, 16);
  ASSERT_TRUE(Ok(r));
  auto icm = sim_->firmware().MkeyDeviceMemory((Index(r) << 8) | 0x5c, 8191, 1);
  ASSERT_TRUE(icm);
  (*icm)[0] = std::byte{7};
  EXPECT_EQ((*sim_->firmware().SwIcmBytes(addr + 4096 + 8191, 1))[0], std::byte{7});
  prm::Message<prm::general_obj_in_cmd_hdr> d;
  d.set(prm::general_obj_in_cmd_hdr::opcode, prm::DESTROY_GENERAL_OBJECT)
      .set(prm::general_obj_in_cmd_hdr::obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(prm::general_obj_in_cmd_hdr::obj_id, obj);
  EXPECT_TRUE(Refused(Exec(d, 16), CommandStatus::RES_BUSY, Syndrome::SW_ICM_BUSY));
  m.set(mkc.len, 1 << 16);
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_SW_ICM_RANGE));
  const uint32_t user_pd = AllocPd(9);
  m.set(mkc.len, 4096).set(mkc.pd, user_pd).set(In::uid, 9);
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  ASSERT_TRUE(Ok(Exec(d, 16)));
}

TEST_F(MkeyTest, TphFieldsAreKeptAndChecked) {
  auto t = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  t.set(mkc.length64, 1).set(mkc.pcie_tph_en, 1).set(mkc.pcie_tph_ph, 2)
      .set(mkc.pcie_tph_steering_tag_index, 5);
  auto r = Exec(t, 16);
  ASSERT_TRUE(Ok(r));
  auto q = Query(Index(r));
  EXPECT_EQ(q.get(QMkc::pcie_tph_en), 1u);
  EXPECT_EQ(q.get(QMkc::pcie_tph_ph), 2u);
  EXPECT_EQ(q.get(QMkc::pcie_tph_steering_tag_index), 5u);
  t.set(mkc.pcie_tph_steering_tag_index, DeviceConfig{}.pcie_tph_steering_tags);
  EXPECT_TRUE(Refused(Exec(t, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_TPH));
  t.set(mkc.pcie_tph_steering_tag_index, 0).set(mkc.pcie_tph_en, 0);
  EXPECT_TRUE(Refused(Exec(t, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_TPH));
}

TEST_F(MkeyTest, PdMustExistAndBeOwnedAndCannotBeOrphaned) {
  auto m = Mkey(prm::MKC_ACCESS_MODE_PA, 999);
  m.set(mkc.length64, 1);
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_RES_ERR, Syndrome::MKEY_PD_UNKNOWN));
  const uint32_t other = AllocPd(4);
  m.set(mkc.pd, other);
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  m.set(mkc.pd, pd_);
  auto r = Exec(m, 16);
  ASSERT_TRUE(Ok(r));
  auto dealloc = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
  dealloc.set(prm::dealloc_pd_in::pd, pd_);
  EXPECT_TRUE(Refused(Exec(dealloc, 16), CommandStatus::RES_BUSY, Syndrome::PD_BUSY));
  EXPECT_TRUE(Refused(Destroy(Index(r), 4), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  ASSERT_TRUE(Ok(Destroy(Index(r))));
  ASSERT_TRUE(Ok(Exec(dealloc, 16)));
}

TEST_F(MkeyTest, UnsupportedModesAndFeatures) {
  auto ksm = Mkey(prm::MKC_ACCESS_MODE_KSM, pd_);
  EXPECT_TRUE(Refused(Exec(ksm, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_ACCESS_MODE));
  auto qpn = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  qpn.set(mkc.length64, 1).set(mkc.qpn, 5);
  EXPECT_TRUE(Refused(Exec(qpn, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_QPN));
  auto bsf = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  bsf.set(mkc.length64, 1).set(mkc.bsf_en, 1);
  EXPECT_TRUE(Refused(Exec(bsf, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_UNSUPPORTED));
  auto umem = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  umem.set(mkc.length64, 1).set(In::mkey_umem_valid, 1);
  EXPECT_TRUE(Refused(Exec(umem, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_UNSUPPORTED));
  auto reserved = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  reserved.set(mkc.length64, 1);
  reserved.bytes()[16] |= std::byte{0x80};  // mkc bit 0 is reserved
  EXPECT_TRUE(
      Refused(Exec(reserved, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

class FewMkeysTest : public MkeyTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.log_max_mkey = 2;  // indices 1..3
    c.mkey_pcie_tph = false;
    return c;
  }
};

TEST_F(FewMkeysTest, ExhaustionIsNoRes) {
  auto m = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  m.set(mkc.length64, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Ok(Exec(m, 16)));
  EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::NO_RES_ERR, Syndrome::MKEY_EXHAUSTED));
}

TEST_F(FewMkeysTest, TphNeedsTheCapability) {
  auto t = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  t.set(mkc.length64, 1).set(mkc.pcie_tph_en, 1);
  EXPECT_TRUE(Refused(Exec(t, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::MKEY_TPH));
}

}  // namespace
}  // namespace onchip::sim::testing
