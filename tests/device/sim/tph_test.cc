// The PCIe TPH steering-tag table: where it sits in BAR0, what tph() tells the bus, how the
// device reads the tag a driver programs, and that an mkey's TPH fields pick it.
#include <cstring>

#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"
#include "uapi/vpci.h"

namespace onchip::sim::testing {
namespace {

using In = prm::create_mkey_in;
constexpr auto mkc = In::memory_key_mkey_entry;
using QMkc = prm::mkc_bits<prm::query_mkey_out::memory_key_mkey_entry.bit_offset>;

class TphTest : public SimTest {
 protected:
  // What a driver does to program ST entry `index` (pcie_tph_set_st_entry): a little-endian
  // store of the Vector Control dword with the tag in bits 31:16.
  void ProgramTag(uint16_t index, uint16_t tag, uint16_t low_bits = 0) {
    auto cap = sim_->tph();
    ASSERT_TRUE(cap);
    const uint32_t v = uint32_t{tag} << vpci::kMsixStShift | low_bits;
    std::byte le[4];
    for (int i = 0; i < 4; ++i) le[i] = std::byte(v >> (8 * i));
    std::memcpy(w_->bar() + cap->st_table_offset + index * vpci::kMsixEntryBytes +
                    vpci::kMsixVectorControlOffset,
                le, 4);
  }
  uint32_t AllocPd() {
    return static_cast<uint32_t>(
        Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 16).get(prm::alloc_pd_out::pd));
  }
  // An MTT mkey over one page, as a DMA-handle registration makes it.
  Reply MttWithTph(uint32_t pd, uint32_t en, uint32_t ph, uint32_t index) {
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 16);
    in.set(mkc.access_mode_1_0, prm::MKC_ACCESS_MODE_MTT)
        .set(mkc.qpn, 0xffffff).set(mkc.lr, 1).set(mkc.lw, 1).set(mkc.pd, pd)
        .set(mkc.mkey_7_0, 0x21).set(mkc.start_addr, 0x10000).set(mkc.len, 4096)
        .set(mkc.log_page_size, 12).set(mkc.translations_octword_size, 1)
        .set(In::translations_octword_actual_size, 1)
        .set(mkc.pcie_tph_en, en).set(mkc.pcie_tph_ph, ph)
        .set(mkc.pcie_tph_steering_tag_index, index);
    prm::Bits(in.bytes().subspan(prm::size_bytes<In>))
        .set(prm::Element<64>{0, "mtt"}, 0x2'0000'0000);
    return Exec(in, 16);
  }
  Reply Query(uint32_t index) {
    auto in = prm::CommandIn<prm::query_mkey_in>(prm::QUERY_MKEY);
    in.set(prm::query_mkey_in::mkey_index, index);
    return Exec(in, prm::size_bytes<prm::query_mkey_out>);
  }
  Reply Destroy(uint32_t index) {
    auto in = prm::CommandIn<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
    in.set(prm::destroy_mkey_in::mkey_index, index);
    return Exec(in, 16);
  }
};

TEST_F(TphTest, TheStTableIsTheMsixTableBetweenTheUarsAndMemic) {
  const DeviceConfig c;
  const BarLayout& l = sim_->layout();
  auto cap = sim_->tph();
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->st_table_offset, l.msix_start);
  EXPECT_EQ(cap->st_table_size, c.pcie_tph_steering_tags);
  EXPECT_EQ(l.msix_start % 4096, 0u);
  EXPECT_GE(l.msix_start, l.uar_end);
  EXPECT_GE(l.memic_start, l.msix_start + uint64_t{c.pcie_tph_steering_tags} * 16);
  EXPECT_EQ(l.memic_start % c.memic_bar_size, 0u);
  EXPECT_LE(l.msix_start + uint64_t{cap->st_table_size} * 16, sim_->bar0().size);
}

TEST_F(TphTest, TheDeviceReadsTheTagTheDriverStores) {
  EXPECT_EQ(sim_->SteeringTag(7), 0);  // a fresh table holds zeros
  ProgramTag(7, 0xbeef, /*low_bits=*/1);  // the mask bit is not part of the tag
  EXPECT_EQ(sim_->SteeringTag(7), 0xbeef);
  ProgramTag(63, 0x00aa);
  EXPECT_EQ(sim_->SteeringTag(63), 0x00aa);
  EXPECT_EQ(sim_->SteeringTag(6), 0);
  EXPECT_FALSE(sim_->SteeringTag(64));  // past the table
}

TEST_F(TphTest, AnMkeyPicksItsEntryAndQueryMkeyReturnsItsFields) {
  BringUp();
  const uint32_t pd = AllocPd();
  auto r = MttWithTph(pd, 1, 3, 5);
  ASSERT_TRUE(Ok(r));
  const uint32_t index = static_cast<uint32_t>(r.get(prm::create_mkey_out::mkey_index));
  auto q = Query(index);
  EXPECT_EQ(q.get(QMkc::pcie_tph_en), 1u);
  EXPECT_EQ(q.get(QMkc::pcie_tph_ph), 3u);
  EXPECT_EQ(q.get(QMkc::pcie_tph_steering_tag_index), 5u);
  const uint32_t key = index << 8 | 0x21;
  ProgramTag(5, 0x1234);
  auto hint = sim_->firmware().MkeyTph(key);
  ASSERT_TRUE(hint);
  EXPECT_EQ(hint->ph, 3);
  EXPECT_EQ(hint->steering_tag, 0x1234);
  // The entry is read when used: a reprogrammed tag is the one the next TLP carries.
  ProgramTag(5, 0x4321);
  EXPECT_EQ(sim_->firmware().MkeyTph(key)->steering_tag, 0x4321);
  EXPECT_FALSE(sim_->firmware().MkeyTph(key ^ 1));  // wrong key byte

  // Index 0: a hint without a steering tag, whatever entry 0 holds.
  ProgramTag(0, 0x7777);
  auto r0 = MttWithTph(pd, 1, 1, 0);
  ASSERT_TRUE(Ok(r0));
  const uint32_t index0 = static_cast<uint32_t>(r0.get(prm::create_mkey_out::mkey_index));
  auto hint0 = sim_->firmware().MkeyTph(index0 << 8 | 0x21);
  ASSERT_TRUE(hint0);
  EXPECT_EQ(hint0->ph, 1);
  EXPECT_FALSE(hint0->steering_tag);

  // No TPH.
  auto rn = MttWithTph(pd, 0, 0, 0);
  ASSERT_TRUE(Ok(rn));
  const uint32_t indexn = static_cast<uint32_t>(rn.get(prm::create_mkey_out::mkey_index));
  EXPECT_EQ(Query(indexn).get(QMkc::pcie_tph_en), 0u);
  EXPECT_FALSE(sim_->firmware().MkeyTph(indexn << 8 | 0x21));
  // An index past the table is refused at creation.
  EXPECT_TRUE(Refused(MttWithTph(pd, 1, 0, 64), prm::CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MKEY_TPH));
  for (uint32_t i : {index, index0, indexn}) ASSERT_TRUE(Ok(Destroy(i)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

class NoTphTest : public TphTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.mkey_pcie_tph = false;
    return c;
  }
};

TEST_F(NoTphTest, NoTableWithoutTheCapability) {
  EXPECT_FALSE(sim_->tph());
  EXPECT_FALSE(sim_->SteeringTag(0));
  EXPECT_EQ(sim_->layout().msix_end, sim_->layout().uar_end);
  EXPECT_EQ(sim_->layout().memic_start % DeviceConfig{}.memic_bar_size, 0u);
}

}  // namespace
}  // namespace onchip::sim::testing
