// CREATE/DESTROY/QUERY_GENERAL_OBJECT for SW_ICM.
#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/sw_icm.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_sw_icm_in;
using Hdr = prm::general_obj_in_cmd_hdr;
using OutHdr = prm::general_obj_out_cmd_hdr;
using Mem = prm::device_mem_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;

class SwIcmTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    auto mem = Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 0x1f), 4112);
    steering_ = mem.get(Mem::steering_sw_icm_start_address);
    header_modify_ = mem.get(Mem::header_modify_sw_icm_start_address);
    pattern_ = mem.get(Mem::header_modify_pattern_sw_icm_start_address);
    encap_ = mem.get(Mem::indirect_encap_sw_icm_start_address);
    block_ = uint64_t{1} << mem.get(Mem::log_sw_icm_alloc_granularity);
  }
  Reply Create(uint64_t addr, uint32_t log_size, uint16_t uid = 0) {
    prm::Message<In> in;
    in.set(In::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
        .set(In::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
        .set(In::hdr.uid, uid)
        .set(In::sw_icm.log_sw_icm_size, log_size)
        .set(In::sw_icm.sw_icm_start_addr, addr);
    return Exec(in, 16);
  }
  prm::Message<Hdr> Obj(uint16_t opcode, uint32_t id, uint16_t uid = 0) {
    prm::Message<Hdr> in;
    in.set(Hdr::opcode, opcode)
        .set(Hdr::obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
        .set(Hdr::obj_id, id)
        .set(Hdr::uid, uid);
    return in;
  }
  uint64_t steering_ = 0, header_modify_ = 0, pattern_ = 0, encap_ = 0, block_ = 0;
};

TEST_F(SwIcmTest, OneObjectPerAreaWithRealBacking) {
  std::vector<uint32_t> ids;
  for (uint64_t area : {steering_, header_modify_, pattern_, encap_}) {
    ASSERT_NE(area, 0u);
    auto r = Create(area + 2 * block_, 13);
    ASSERT_TRUE(Ok(r));
    ids.push_back(static_cast<uint32_t>(r.get(OutHdr::obj_id)));
  }
  EXPECT_EQ(sim_->counters().sw_icm_objects, 4u);
  // The backing storage is real: bytes written stay, and it starts zeroed.
  auto bytes = sim_->firmware().SwIcmBytes(steering_ + 2 * block_, 8192);
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[100], std::byte{0});
  (*bytes)[100] = std::byte{0x42};
  EXPECT_EQ((*sim_->firmware().SwIcmBytes(steering_ + 2 * block_ + 100, 1))[0], std::byte{0x42});
  EXPECT_FALSE(sim_->firmware().SwIcmBytes(steering_ + 2 * block_, 8193));

  auto q = Exec(Obj(prm::QUERY_GENERAL_OBJECT, ids[0]), 80);
  ASSERT_TRUE(Ok(q));
  using IcmOut = prm::sw_icm_bits<OutHdr::size_bits>;
  EXPECT_EQ(q.get(IcmOut::sw_icm_start_addr), steering_ + 2 * block_);
  EXPECT_EQ(q.get(IcmOut::log_sw_icm_size), 13u);
  EXPECT_EQ(q.get(OutHdr::obj_id), ids[0]);

  for (uint32_t id : ids) ASSERT_TRUE(Ok(Exec(Obj(prm::DESTROY_GENERAL_OBJECT, id), 16)));
  EXPECT_EQ(sim_->counters().sw_icm_objects, 0u);
  EXPECT_TRUE(Refused(Exec(Obj(prm::DESTROY_GENERAL_OBJECT, ids[0]), 16),
                      CommandStatus::BAD_RES_ERR, Syndrome::SW_ICM_UNKNOWN));
  EXPECT_TRUE(Refused(Exec(Obj(prm::QUERY_GENERAL_OBJECT, ids[0]), 80),
                      CommandStatus::BAD_RES_ERR, Syndrome::SW_ICM_UNKNOWN));
}

TEST_F(SwIcmTest, SizeAlignmentAndAreaRules) {
  const uint32_t log_block = std::countr_zero(block_);
  EXPECT_TRUE(Refused(Create(steering_, log_block - 1), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::SW_ICM_SIZE));
  EXPECT_TRUE(Refused(Create(steering_, DeviceConfig{}.log_steering_sw_icm_size + 1),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::SW_ICM_SIZE));
  EXPECT_TRUE(Refused(Create(steering_ + 64, log_block), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::SW_ICM_ADDRESS));
  EXPECT_TRUE(Refused(Create(0x1000, log_block), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::SW_ICM_ADDRESS));
  // Runs past the end of its area.
  const uint64_t area_size = uint64_t{1} << DeviceConfig{}.log_header_modify_sw_icm_size;
  EXPECT_TRUE(Refused(Create(header_modify_ + area_size - block_, log_block + 1),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::SW_ICM_ADDRESS));
  // The whole area is one valid object.
  ASSERT_TRUE(Ok(Create(header_modify_, DeviceConfig{}.log_header_modify_sw_icm_size)));
  EXPECT_TRUE(Refused(Create(header_modify_ + block_, log_block), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::SW_ICM_OVERLAP));
  EXPECT_EQ(sim_->counters().sw_icm_objects, 1u);
}

TEST_F(SwIcmTest, HeaderFieldsThatMustBeZero) {
  prm::Message<In> in;
  in.set(In::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
      .set(In::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(In::sw_icm.log_sw_icm_size, 12)
      .set(In::sw_icm.sw_icm_start_addr, steering_);
  in.set(In::hdr.obj_id, 3);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::OBJECT_ID));
  in.set(In::hdr.obj_id, 0).set(In::hdr.op_param.create.log_obj_range, 1);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::OBJECT_PARAM));
  in.set(In::hdr.op_param.create.log_obj_range, 0).set(In::sw_icm.modify_field_select, 1);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::OBJECT_PARAM));
  in.set(In::sw_icm.modify_field_select, 0).set(In::hdr.obj_type, 0x13);
  EXPECT_TRUE(
      Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::OBJECT_TYPE_UNSUPPORTED));
  in.set(In::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM);
  in.bytes()[16 + 12] = std::byte{1};  // sw_icm reserved word
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  // Input without the sw_icm part.
  prm::Message<Hdr> hdr_only;
  hdr_only.set(Hdr::opcode, prm::CREATE_GENERAL_OBJECT)
      .set(Hdr::obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM);
  EXPECT_TRUE(
      Refused(Exec(hdr_only, 16), CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
  EXPECT_EQ(sim_->counters().sw_icm_objects, 0u);
}

TEST_F(SwIcmTest, OwnershipIsByUid) {
  auto r = Create(steering_, 12, 7);
  ASSERT_TRUE(Ok(r));
  const uint32_t id = static_cast<uint32_t>(r.get(OutHdr::obj_id));
  EXPECT_TRUE(Refused(Exec(Obj(prm::DESTROY_GENERAL_OBJECT, id, 8), 16),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(Exec(Obj(prm::QUERY_GENERAL_OBJECT, id, 0), 80),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  ASSERT_TRUE(Ok(Exec(Obj(prm::DESTROY_GENERAL_OBJECT, id, 7), 16)));
}

class NoSwIcmTest : public SimTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.sw_icm = false;
    return c;
  }
};

TEST_F(NoSwIcmTest, ObjectTypeIsNotAdvertisedNorAccepted) {
  BringUp();
  prm::Message<In> in;
  in.set(In::hdr.opcode, prm::CREATE_GENERAL_OBJECT)
      .set(In::hdr.obj_type, prm::GENERAL_OBJECT_TYPES_SW_ICM)
      .set(In::sw_icm.log_sw_icm_size, 12)
      .set(In::sw_icm.sw_icm_start_addr, uint64_t{1} << 40);
  EXPECT_TRUE(
      Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::OBJECT_TYPE_UNSUPPORTED));
}

}  // namespace
}  // namespace onchip::sim::testing
