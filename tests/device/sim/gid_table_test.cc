// Port 1's GID table as the firmware reports it (tools/sim/gid_table.h): larger than what it
// holds, empty entries all zero. QUERY_ROCE_ADDRESS on a RoCE port (an address entry as
// SET_ROCE_ADDRESS writes one, an empty entry, an index past the table), QUERY_HCA_VPORT_GID on
// an InfiniBand port (the port GID, an empty entry), each command refused on the other port type,
// and the capabilities that give the table's size.
#include <cstring>

#include "tests/device/sim/sim_fixture.h"
#include "tools/sim/gid_table.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::query_roce_address_in;
using Out = prm::query_roce_address_out;
using Addr = prm::roce_addr_layout_bits<Out::roce_address.bit_offset>;
constexpr std::size_t kRoceOut = prm::size_bytes<Out>;
constexpr std::size_t kVportGidOut = prm::size_bytes<prm::query_hca_vport_gid_out> + 16;

Gid L3Address(const Reply& r) {
  Gid g{};
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(r.get(Addr::source_l3_address[i]));
  return g;
}

prm::Message<In> QueryRoceAddress(uint32_t index) {
  auto m = prm::CommandIn<In>(prm::QUERY_ROCE_ADDRESS);
  m.set(In::roce_address_index, index);
  return m;
}

class RoceGidTableTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
  }
};

TEST_F(RoceGidTableTest, TheTableIsLargerThanItsFourAddresses) {
  const DeviceConfig c;
  EXPECT_EQ(GidTableSize(c), c.roce_address_table_size);
  EXPECT_GT(c.roce_address_table_size, 4u);
  const auto cap =
      Exec(prm::CommandIn<prm::query_hca_cap_in>(
               prm::QUERY_HCA_CAP, prm::QueryCapOpMod(prm::CAP_ROCE, prm::HCA_CAP_OPMOD_GET_CUR)),
           prm::size_bytes<prm::query_hca_cap_out>);
  ASSERT_TRUE(Ok(cap));
  using Roce = prm::roce_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  EXPECT_EQ(cap.get(Roce::roce_address_table_size), c.roce_address_table_size);
  const auto table = GidTable(c);
  ASSERT_EQ(table.size(), c.roce_address_table_size);
  for (std::size_t i = 0; i < table.size(); ++i) EXPECT_EQ(IsZero(table[i].gid), i >= 4) << i;
}

TEST_F(RoceGidTableTest, AnAddressEntryAsSetRoceAddressWritesIt) {
  const DeviceConfig c;
  const auto table = GidTable(c);
  // Index 0: the link-local GID as RoCE v1.
  Reply r = Exec(QueryRoceAddress(0), kRoceOut);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(L3Address(r), table[0].gid);
  EXPECT_EQ(r.get(Addr::source_l3_address[0]), 0xfeu);
  EXPECT_EQ(r.get(Addr::roce_version), prm::MLX5_ROCE_VERSION_1);
  EXPECT_EQ(r.get(Addr::source_mac_47_32), uint64_t{c.mac[0]} << 8 | c.mac[1]);
  EXPECT_EQ(r.get(Addr::source_mac_31_0), uint64_t{c.mac[2]} << 24 | uint64_t{c.mac[3]} << 16 |
                                              uint64_t{c.mac[4]} << 8 | c.mac[5]);
  EXPECT_EQ(r.get(Addr::vlan_valid), 0u);
  // Index 3: ::ffff:127.0.0.1 as RoCE v2 over IPv4; index 1, the link-local one, over IPv6.
  r = Exec(QueryRoceAddress(3), kRoceOut);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(L3Address(r), table[3].gid);
  EXPECT_EQ(r.get(Addr::source_l3_address[15]), 1u);
  EXPECT_EQ(r.get(Addr::roce_version), prm::MLX5_ROCE_VERSION_2);
  EXPECT_EQ(r.get(Addr::roce_l3_type), prm::MLX5_ROCE_L3_TYPE_IPV4);
  r = Exec(QueryRoceAddress(1), kRoceOut);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(r.get(Addr::roce_version), prm::MLX5_ROCE_VERSION_2);
  EXPECT_EQ(r.get(Addr::roce_l3_type), prm::MLX5_ROCE_L3_TYPE_IPV6);
}

TEST_F(RoceGidTableTest, AnEmptyEntryIsAllZero) {
  const DeviceConfig c;
  for (uint32_t i : {4u, uint32_t{c.roce_address_table_size} - 1u}) {
    const Reply r = Exec(QueryRoceAddress(i), kRoceOut);
    ASSERT_TRUE(Ok(r)) << i;
    for (std::size_t b = Out::roce_address.byte_offset; b < kRoceOut; ++b)
      EXPECT_EQ(r.out[b], std::byte{0}) << "entry " << i << " byte " << b;
  }
}

TEST_F(RoceGidTableTest, RefusedPastTheTableOnAnotherPortOrWithAnUnknownOpMod) {
  const DeviceConfig c;
  EXPECT_TRUE(Refused(Exec(QueryRoceAddress(c.roce_address_table_size), kRoceOut),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::ROCE_ADDRESS_INDEX));
  EXPECT_TRUE(Refused(Exec(QueryRoceAddress(0xffff), kRoceOut), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::ROCE_ADDRESS_INDEX));
  auto port = QueryRoceAddress(0);
  port.set(In::vhca_port_num, c.num_ports + 1);
  EXPECT_TRUE(Refused(Exec(port, kRoceOut), CommandStatus::BAD_PARAM_ERR, Syndrome::PORT_NUM));
  auto op_mod = prm::CommandIn<In>(prm::QUERY_ROCE_ADDRESS, 1);
  EXPECT_TRUE(Refused(Exec(op_mod, kRoceOut), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  // An InfiniBand command on this Ethernet port.
  EXPECT_TRUE(Refused(
      Exec(prm::CommandIn<prm::query_hca_vport_gid_in>(prm::QUERY_HCA_VPORT_GID), kVportGidOut),
      CommandStatus::BAD_PARAM_ERR, Syndrome::PORT_NOT_IB));
}

class IbGidTableTest : public SimTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.port_type = DeviceConfig::PortType::kInfiniBand;
    return c;
  }
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
  }
  Reply QueryGid(uint32_t index) {
    auto m = prm::CommandIn<prm::query_hca_vport_gid_in>(prm::QUERY_HCA_VPORT_GID);
    m.set(prm::query_hca_vport_gid_in::gid_index, index);
    return Exec(m, kVportGidOut);
  }
};

TEST_F(IbGidTableTest, EightEntriesOnlyThePortGidHeld) {
  const auto cap = Exec(
      prm::CommandIn<prm::query_hca_cap_in>(
          prm::QUERY_HCA_CAP, prm::QueryCapOpMod(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR)),
      prm::size_bytes<prm::query_hca_cap_out>);
  ASSERT_TRUE(Ok(cap));
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  EXPECT_EQ(8u << cap.get(Gen::gid_table_size), kIbGidTableSize);
  EXPECT_EQ(GidTableSize(Config()), kIbGidTableSize);
  const auto table = GidTable(Config());
  Reply r = QueryGid(0);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(std::memcmp(r.out.data() + prm::size_bytes<prm::query_hca_vport_gid_out>,
                        table[0].gid.data(), 16), 0);
  EXPECT_FALSE(IsZero(table[0].gid));
  for (uint32_t i = 1; i < kIbGidTableSize; ++i) {
    r = QueryGid(i);
    ASSERT_TRUE(Ok(r)) << i;
    EXPECT_EQ(r.get(prm::query_hca_vport_gid_out::gids_num), 1u);
    for (std::size_t b = prm::size_bytes<prm::query_hca_vport_gid_out>; b < kVportGidOut; ++b)
      EXPECT_EQ(r.out[b], std::byte{0}) << "entry " << i << " byte " << b;
  }
  EXPECT_TRUE(Refused(QueryGid(kIbGidTableSize), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::VPORT_GID_INDEX));
}

TEST_F(IbGidTableTest, QueryRoceAddressIsRefusedOnAnInfiniBandPort) {
  EXPECT_TRUE(Refused(Exec(QueryRoceAddress(0), kRoceOut), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::PORT_NOT_ETH));
}

}  // namespace
}  // namespace onchip::sim::testing
