// UARs, PDs and transport domains: allocation, ownership, double free, exhaustion.
#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;

class ResourcesTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
  }
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.num_uars = 4;
    c.log_max_pd = 2;  // PDs 1..3
    c.log_max_transport_domain = 2;
    return c;
  }
  template <class L>
  Reply Alloc(uint16_t opcode, uint16_t uid = 0) {
    auto in = prm::CommandIn<L>(opcode);
    in.set(L::uid, uid);
    return Exec(in, 16);
  }
  template <class L, class F>
  Reply Dealloc(uint16_t opcode, F field, uint32_t id, uint16_t uid = 0) {
    auto in = prm::CommandIn<L>(opcode);
    in.set(L::uid, uid).set(field, id);
    return Exec(in, 16);
  }
};

TEST_F(ResourcesTest, UarIndicesArePagesOfBar0AfterTheInitSegment) {
  const DeviceConfig c = Config();
  std::vector<uint32_t> got;
  for (uint32_t i = 0; i < c.num_uars; ++i) {
    auto r = Alloc<prm::alloc_uar_in>(prm::ALLOC_UAR);
    ASSERT_TRUE(Ok(r));
    got.push_back(static_cast<uint32_t>(r.get(prm::alloc_uar_out::uar)));
  }
  for (uint32_t i = 0; i < c.num_uars; ++i) {
    EXPECT_EQ(got[i], c.first_uar_index + i);
    EXPECT_LT(uint64_t{got[i]} * 4096 + 4096, sim_->bar0().size + 1);
    EXPECT_GE(uint64_t{got[i]} * 4096, sim_->layout().uar_start);
  }
  EXPECT_TRUE(Refused(Alloc<prm::alloc_uar_in>(prm::ALLOC_UAR), CommandStatus::NO_RES_ERR,
                      Syndrome::UAR_EXHAUSTED));
  EXPECT_EQ(sim_->counters().uars, c.num_uars);
  ASSERT_TRUE(Ok(Dealloc<prm::dealloc_uar_in>(prm::DEALLOC_UAR, prm::dealloc_uar_in::uar, got[1])));
  // The freed index is handed out again.
  auto again = Alloc<prm::alloc_uar_in>(prm::ALLOC_UAR);
  EXPECT_EQ(again.get(prm::alloc_uar_out::uar), got[1]);
  for (uint32_t u : got)
    ASSERT_TRUE(Ok(Dealloc<prm::dealloc_uar_in>(prm::DEALLOC_UAR, prm::dealloc_uar_in::uar, u)));
  EXPECT_EQ(sim_->counters().uars, 0u);
}

TEST_F(ResourcesTest, UarDoubleFreeAndForeignUid) {
  auto r = Alloc<prm::alloc_uar_in>(prm::ALLOC_UAR, 5);
  const uint32_t uar = static_cast<uint32_t>(r.get(prm::alloc_uar_out::uar));
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_uar_in>(prm::DEALLOC_UAR, prm::dealloc_uar_in::uar, uar, 6),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  ASSERT_TRUE(Ok(Dealloc<prm::dealloc_uar_in>(prm::DEALLOC_UAR, prm::dealloc_uar_in::uar, uar, 5)));
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_uar_in>(prm::DEALLOC_UAR, prm::dealloc_uar_in::uar, uar, 5),
                      CommandStatus::BAD_RES_ERR, Syndrome::UAR_UNKNOWN));
}

TEST_F(ResourcesTest, PdLifeCycle) {
  std::vector<uint32_t> pds;
  for (int i = 0; i < 3; ++i) {
    auto r = Alloc<prm::alloc_pd_in>(prm::ALLOC_PD, 1);
    ASSERT_TRUE(Ok(r));
    pds.push_back(static_cast<uint32_t>(r.get(prm::alloc_pd_out::pd)));
  }
  EXPECT_NE(pds[0], pds[1]);
  EXPECT_TRUE(Refused(Alloc<prm::alloc_pd_in>(prm::ALLOC_PD), CommandStatus::NO_RES_ERR,
                      Syndrome::PD_EXHAUSTED));
  EXPECT_EQ(sim_->counters().pds, 3u);
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_pd_in>(prm::DEALLOC_PD, prm::dealloc_pd_in::pd, pds[0], 0),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  for (uint32_t pd : pds)
    ASSERT_TRUE(Ok(Dealloc<prm::dealloc_pd_in>(prm::DEALLOC_PD, prm::dealloc_pd_in::pd, pd, 1)));
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_pd_in>(prm::DEALLOC_PD, prm::dealloc_pd_in::pd, pds[0], 1),
                      CommandStatus::BAD_RES_ERR, Syndrome::PD_UNKNOWN));
  EXPECT_EQ(sim_->counters().pds, 0u);
}

TEST_F(ResourcesTest, TransportDomainLifeCycle) {
  auto r = Alloc<prm::alloc_transport_domain_in>(prm::ALLOC_TRANSPORT_DOMAIN);
  ASSERT_TRUE(Ok(r));
  const uint32_t td = static_cast<uint32_t>(r.get(prm::alloc_transport_domain_out::transport_domain));
  EXPECT_NE(td, 0u);
  EXPECT_EQ(sim_->counters().transport_domains, 1u);
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_transport_domain_in>(
                          prm::DEALLOC_TRANSPORT_DOMAIN,
                          prm::dealloc_transport_domain_in::transport_domain, td, 3),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  ASSERT_TRUE(Ok(Dealloc<prm::dealloc_transport_domain_in>(
      prm::DEALLOC_TRANSPORT_DOMAIN, prm::dealloc_transport_domain_in::transport_domain, td)));
  EXPECT_TRUE(Refused(Dealloc<prm::dealloc_transport_domain_in>(
                          prm::DEALLOC_TRANSPORT_DOMAIN,
                          prm::dealloc_transport_domain_in::transport_domain, td),
                      CommandStatus::BAD_RES_ERR, Syndrome::TD_UNKNOWN));
  EXPECT_EQ(sim_->counters().transport_domains, 0u);
}

TEST_F(ResourcesTest, ReservedBitsOpModAndLengths) {
  auto pd = prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD);
  pd.bytes()[12] = std::byte{0x80};
  EXPECT_TRUE(Refused(Exec(pd, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD, 1), 16),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  // Output too short to carry the PD number.
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 8),
                      CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
  // Input shorter than the layout (only the inline 16 bytes exist; DEALLOC_PD needs 16: use 12).
  std::vector<std::byte> tiny(12);
  tiny[0] = std::byte{0x08};
  tiny[1] = std::byte{0x01};
  auto r = w_->Run(tiny, 16);
  ASSERT_TRUE(r);
  EXPECT_TRUE(Refused(*r, CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
  EXPECT_EQ(sim_->counters().pds, 0u);
}

}  // namespace
}  // namespace onchip::sim::testing
