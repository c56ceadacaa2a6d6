// The MEMIC and SW ICM allocators against a scripted firmware: which ranges they ask for, how
// they walk past NOT_READY / NO_RES, and that the bitmaps only keep what the firmware granted.
#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "driver/caps.h"
#include "driver/cmd/commander.h"
#include "driver/memic.h"
#include "driver/sw_icm.h"
#include "uapi/cmd_status.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/sw_icm.h"

namespace onchip::driver {
namespace {

using prm::CommandStatus;

// Answers each command with the next scripted status (OK when the script is empty) and records
// the inputs. ALLOC_MEMIC succeeds at range_start_addr; CREATE_GENERAL_OBJECT returns id 7.
class ScriptedFirmware : public driver::cmd::Commander {
 public:
  std::deque<CommandStatus> script;
  std::vector<std::vector<std::byte>> seen;

  Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) override {
    seen.emplace_back(in.begin(), in.end());
    std::fill(out.begin(), out.end(), std::byte{0});
    CommandStatus status = CommandStatus::OK;
    if (!script.empty()) {
      status = script.front();
      script.pop_front();
    }
    prm::Bits o(out);
    o.set(prm::mbox_out::status, static_cast<uint8_t>(status));
    if (status == CommandStatus::OK) {
      const uint16_t opcode = prm::Get(in, prm::mbox_in::opcode);
      if (opcode == prm::ALLOC_MEMIC)
        o.set(prm::alloc_memic_out::memic_start_addr,
              prm::Get(in, prm::alloc_memic_in::range_start_addr));
      if (opcode == prm::CREATE_GENERAL_OBJECT) o.set(prm::general_obj_out_cmd_hdr::obj_id, 7);
    }
    return driver::cmd::CheckOutputStatus(in, out);
  }
};

constexpr uint64_t kBarStart = 0x100000;
constexpr uint64_t kBarSize = 16 * 4096;

Caps MakeCaps() {
  Caps caps;
  std::vector<std::byte> general(Caps::kPageBytes), dev(Caps::kPageBytes), ft(Caps::kPageBytes);
  prm::Bits(general)
      .set(prm::cmd_hca_cap::device_memory, 1)
      .set(prm::cmd_hca_cap::general_obj_types, uint64_t{1} << prm::GENERAL_OBJECT_TYPES_SW_ICM);
  prm::Bits(dev)
      .set(prm::device_mem_cap::memic, 1)
      .set(prm::device_mem_cap::memic_bar_start_addr, kBarStart)
      .set(prm::device_mem_cap::memic_bar_size, kBarSize)
      .set(prm::device_mem_cap::max_memic_size, kBarSize)
      .set(prm::device_mem_cap::log_max_memic_addr_alignment, 6)
      .set(prm::device_mem_cap::log_sw_icm_alloc_granularity, 12)
      .set(prm::device_mem_cap::steering_sw_icm_start_address, 0x40000000)
      .set(prm::device_mem_cap::log_steering_sw_icm_size, 16);  // 16 blocks of 4 KiB
  prm::Bits ftb(ft);
  prm::Bits(ftb.region(prm::flow_table_nic_cap::flow_table_properties_nic_receive))
      .set(prm::flow_table_prop_layout::sw_owner, 1);
  caps.Store(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR, general);
  caps.Store(prm::CAP_DEV_MEM, prm::HCA_CAP_OPMOD_GET_CUR, dev);
  caps.Store(prm::CAP_FLOW_TABLE, prm::HCA_CAP_OPMOD_GET_CUR, ft);
  return caps;
}

TEST(Memic, AsksForPageRangesAndRoundsTo64) {
  MemicAllocator memic;
  memic.Configure(MakeCaps(), kBarStart + kBarSize);
  ScriptedFirmware fw;
  auto a = memic.Alloc(fw, 100, 0);
  ASSERT_TRUE(a) << a.error().describe();
  EXPECT_EQ(a->size, 128u);
  EXPECT_EQ(a->bar_offset, kBarStart);
  const auto& in = fw.seen.back();
  EXPECT_EQ(prm::Get(in, prm::alloc_memic_in::memic_size), 128u);
  EXPECT_EQ(prm::Get(in, prm::alloc_memic_in::range_size), 4096u);
  EXPECT_EQ(prm::Get(in, prm::alloc_memic_in::log_memic_addr_alignment), 0u);
  auto b = memic.Alloc(fw, 4097, 12);  // two pages, 4 KiB alignment = 2^(12-6) units
  ASSERT_TRUE(b);
  EXPECT_EQ(b->bar_offset, kBarStart + 4096);
  EXPECT_EQ(prm::Get(fw.seen.back(), prm::alloc_memic_in::log_memic_addr_alignment), 6u);
  EXPECT_EQ(memic.pages_in_use(), 3u);
  ASSERT_TRUE(memic.Free(fw, *a));
  EXPECT_EQ(memic.pages_in_use(), 2u);
}

TEST(Memic, AlignmentRuleIsTheKernels) {
  MemicAllocator memic;
  memic.Configure(MakeCaps(), kBarStart + kBarSize);
  ScriptedFirmware fw;
  // log_align_req below 6 means "no alignment"; above 6 + log_max (6) is EINVAL.
  EXPECT_TRUE(memic.Alloc(fw, 64, 5));
  EXPECT_TRUE(memic.Alloc(fw, 64, 12));
  auto bad = memic.Alloc(fw, 64, 13);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().errno_value(), EINVAL);
}

TEST(Memic, WalksPastNotReadyAndNoResThenEnomem) {
  MemicAllocator memic;
  memic.Configure(MakeCaps(), kBarStart + kBarSize);
  ScriptedFirmware fw;
  fw.script = {CommandStatus::NOT_READY, CommandStatus::NO_RES_ERR};
  auto a = memic.Alloc(fw, 64, 0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bar_offset, kBarStart + 2 * 4096);
  EXPECT_EQ(memic.pages_in_use(), 1u);  // only the granted page is marked
  fw.script.assign(16, CommandStatus::NO_RES_ERR);
  auto none = memic.Alloc(fw, 64, 0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().errno_value(), ENOMEM);
  EXPECT_EQ(memic.pages_in_use(), 1u);
  // Any other refusal stops the walk with the firmware's errno.
  fw.script = {CommandStatus::BAD_PARAM_ERR};
  auto refused = memic.Alloc(fw, 64, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().errno_value(), EINVAL);
  EXPECT_TRUE(refused.error().from_firmware());
  EXPECT_EQ(memic.pages_in_use(), 1u);
}

TEST(Memic, FailedFreeKeepsThePagesMarked) {
  MemicAllocator memic;
  memic.Configure(MakeCaps(), kBarStart + kBarSize);
  ScriptedFirmware fw;
  auto a = memic.Alloc(fw, 64, 0);
  ASSERT_TRUE(a);
  fw.script = {CommandStatus::INT_ERR};
  EXPECT_FALSE(memic.Free(fw, *a));
  EXPECT_EQ(memic.pages_in_use(), 1u);
  EXPECT_TRUE(memic.Free(fw, *a));
  EXPECT_EQ(memic.pages_in_use(), 0u);
}

TEST(Memic, WindowOutsideBar0IsNoMemic) {
  MemicAllocator memic;
  memic.Configure(MakeCaps(), kBarStart + kBarSize - 1);
  EXPECT_FALSE(memic.supported());
  ScriptedFirmware fw;
  EXPECT_EQ(memic.Alloc(fw, 64, 0).error().errno_value(), EOPNOTSUPP);
}

TEST(SwIcm, PowerOfTwoBlocksAlignedAndReleasedOnFailure) {
  SwIcmAllocator icm;
  icm.Configure(MakeCaps());
  EXPECT_TRUE(icm.supported(prm::SW_ICM_TYPE_STEERING));
  EXPECT_FALSE(icm.supported(prm::SW_ICM_TYPE_HEADER_MODIFY));
  ScriptedFirmware fw;
  auto a = icm.Alloc(fw, prm::SW_ICM_TYPE_STEERING, 1, 0);  // one block
  ASSERT_TRUE(a);
  EXPECT_EQ(a->icm_address, 0x40000000u);
  EXPECT_EQ(a->size, 4096u);
  EXPECT_EQ(a->obj_id, 7u);
  auto b = icm.Alloc(fw, prm::SW_ICM_TYPE_STEERING, 3 * 4096, 14);  // 16 KiB, 16 KiB aligned
  ASSERT_TRUE(b);
  EXPECT_EQ(b->size, 16384u);
  EXPECT_EQ(b->icm_address, 0x40000000u + 16384);
  const auto& in = fw.seen.back();
  EXPECT_EQ(prm::Get(in, prm::create_sw_icm_in::hdr.obj_type), prm::GENERAL_OBJECT_TYPES_SW_ICM);
  EXPECT_EQ(prm::Get(in, prm::create_sw_icm_in::sw_icm.log_sw_icm_size), 14u);
  EXPECT_EQ(prm::Get(in, prm::create_sw_icm_in::sw_icm.sw_icm_start_addr), b->icm_address);
  EXPECT_EQ(icm.blocks_in_use(), 5u);

  fw.script = {CommandStatus::LIM_ERR};
  auto refused = icm.Alloc(fw, prm::SW_ICM_TYPE_STEERING, 4096, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().errno_value(), ENOMEM);
  EXPECT_EQ(icm.blocks_in_use(), 5u);

  auto too_big = icm.Alloc(fw, prm::SW_ICM_TYPE_STEERING, 16 * 4096 + 1, 0);
  EXPECT_EQ(too_big.error().errno_value(), ENOMEM);
  EXPECT_EQ(icm.Alloc(fw, prm::SW_ICM_TYPE_HEADER_MODIFY, 4096, 0).error().errno_value(),
            EOPNOTSUPP);
  ASSERT_TRUE(icm.Free(fw, *a));
  ASSERT_TRUE(icm.Free(fw, *b));
  EXPECT_EQ(icm.blocks_in_use(), 0u);
}

TEST(OutputStatus, MapsToTheKernelErrnoWithContext) {
  std::vector<std::byte> in(16), out(16);
  prm::Bits(in).set(prm::mbox_in::opcode, prm::ALLOC_MEMIC).set(prm::mbox_in::op_mod, 3);
  EXPECT_TRUE(driver::cmd::CheckOutputStatus(in, out));
  prm::Bits(out).set(prm::mbox_out::status, 0x0f).set(prm::mbox_out::syndrome, 0xabc);
  auto r = driver::cmd::CheckOutputStatus(in, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EAGAIN);
  EXPECT_EQ(r.error().firmware().opcode, prm::ALLOC_MEMIC);
  EXPECT_EQ(r.error().firmware().op_mod, 3);
  EXPECT_EQ(r.error().firmware().status, 0x0f);
  EXPECT_EQ(r.error().firmware().syndrome, 0xabcu);
  EXPECT_STREQ(r.error().what(), "ALLOC_MEMIC");
}

}  // namespace
}  // namespace onchip::driver
