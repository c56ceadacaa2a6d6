// Address handles: libmlx5's checks (a bad port is NULL with errno untouched, RoCE needs a GRH,
// the GID index must be in the table and name a held entry) and the address vector the send ring
// copies, field by field.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "driver/ah.h"
#include "driver/gid_table.h"
#include "tests/device/fixture.h"
#include "tools/sim/gid_table.h"

namespace onchip::testing {
namespace {

class AhTest : public DriverPdTest {
 protected:
  static ibv_ah_attr Global() {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.port_num = 1;
    a.sl = 5;
    a.static_rate = IBV_RATE_100_GBPS;
    a.grh.sgid_index = 3;
    a.grh.hop_limit = 17;
    a.grh.traffic_class = 0x28;
    a.grh.flow_label = 0x12345;
    // fe80::0e42:a1ff:fe4f:0002: link-local, MAC 0c:42:a1:4f:00:02.
    const uint8_t gid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0e, 0x42, 0xa1, 0xff, 0xfe, 0x4f, 0, 2};
    std::memcpy(a.grh.dgid.raw, gid, 16);
    return a;
  }
};

TEST_F(AhTest, TheAddressVector) {
  ibv_ah_attr attr = Global();
  ibv_ah* ah = v::create_ah(pd_, &attr);
  ASSERT_NE(ah, nullptr) << strerror(errno);
  EXPECT_EQ(ah->pd, pd_);
  EXPECT_EQ(ah->context, verbs_);
  const auto& av = driver::Ah::From(ah)->dp.av;
  EXPECT_EQ(av.stat_rate_sl, 15 << 4 | 5 << 1);  // 100 Gb/s is rate code 15; SL 5 as priority
  // ibv_flow_label_to_udp_sport(0x12345): 0x2345 ^ (0x10000 >> 14) = 0x2341, | 0xc000.
  EXPECT_EQ(av.udp_sport.host(), 0xe341);
  const uint8_t mac[6] = {0x0c, 0x42, 0xa1, 0x4f, 0, 2};
  EXPECT_EQ(0, std::memcmp(av.rmac, mac, 6));
  EXPECT_EQ(av.tclass, 0x28);
  EXPECT_EQ(av.hop_limit, 17);
  EXPECT_EQ(av.grh_gid_fl.host(), 3u << 20 | 0x12345);  // no GRH bit on RoCE
  EXPECT_EQ(0, std::memcmp(av.rgid, attr.grh.dgid.raw, 16));
  EXPECT_EQ(v::dealloc_pd(pd_), EBUSY);  // the AH pins its PD
  EXPECT_EQ(v::destroy_ah(ah), 0);
}

TEST_F(AhTest, Checks) {
  ibv_ah_attr attr = Global();
  attr.port_num = 2;
  errno = 1234;
  EXPECT_EQ(v::create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, 1234);  // libmlx5 leaves errno alone for a bad port
  attr = Global();
  attr.is_global = 0;
  errno = 0;
  EXPECT_EQ(v::create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(v::create_ah(nullptr, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

// Port 1's GID table as the driver read it from the firmware at open (QUERY_ROCE_ADDRESS): 16
// entries, the first four held. A GRH's sgid_index past it is EINVAL, one naming an empty entry
// ENODATA, as the kernel's rdma_get_gid_attr answers.
TEST_F(AhTest, TheSourceGidMustBeAHeldEntry) {
  const driver::GidTable& table = device().gid_table();
  ASSERT_EQ(table.size(), sim_->config().roce_address_table_size);
  const auto gids = sim::DeviceGids(sim_->config());
  for (uint32_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table.populated(i), i < 4) << i;
    EXPECT_EQ(0, std::memcmp(table.gid(i).data(), gids[i].data(), 16)) << i;
  }
  EXPECT_FALSE(table.populated(table.size()));
  ibv_ah_attr attr = Global();
  attr.grh.sgid_index = static_cast<uint8_t>(table.size());
  errno = 0;
  EXPECT_EQ(v::create_ah(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  for (uint8_t empty : {uint8_t{4}, static_cast<uint8_t>(table.size() - 1)}) {
    attr.grh.sgid_index = empty;
    errno = 0;
    EXPECT_EQ(v::create_ah(pd_, &attr), nullptr) << int(empty);
    EXPECT_EQ(errno, ENODATA) << int(empty);
  }
  attr.grh.sgid_index = 3;
  ibv_ah* ah = v::create_ah(pd_, &attr);
  ASSERT_NE(ah, nullptr) << strerror(errno);
  EXPECT_EQ(v::destroy_ah(ah), 0);
}

TEST_F(AhTest, CloseReleasesALiveAh) {
  ibv_ah_attr attr = Global();
  ibv_ah* ah = v::create_ah(pd_, &attr);
  ASSERT_NE(ah, nullptr);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kAh), 1u);
  EXPECT_EQ(v::destroy_ah(ah), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  ctx_.reset();
}

}  // namespace
}  // namespace onchip::testing
