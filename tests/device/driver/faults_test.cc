// Firmware errors on every command of bring-up, allocation and free: each returns a clear error
// (errno from the status, the failing opcode and the device's syndrome) and the device's
// counters prove nothing was left behind.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include "tests/device/fixture.h"
#include "uapi/cmd_status.h"

namespace onchip {
namespace {

namespace v = driver::verbs;
using prm::CommandStatus;

constexpr uint32_t kSyndrome = 0x5eed0001;
constexpr unsigned kRw = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

using testing::ExpectNothingHeld;
using testing::MakeDevice;

class BringUpFault : public ::testing::TestWithParam<uint16_t> {};

TEST_P(BringUpFault, FailsCleanlyAndLeavesTheDeviceEmpty) {
  const uint16_t opcode = GetParam();
  auto sim = MakeDevice();
  sim->InjectFailure({.count = 1, .opcode = opcode, .status = CommandStatus::INT_ERR,
                      .syndrome = kSyndrome});
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_FALSE(ctx) << "bring-up survived a failed " << driver::cmd::OpcodeName(opcode);
  const Error& e = ctx.error();
  EXPECT_EQ(e.errno_value(), EIO) << e.describe();
  ASSERT_TRUE(e.from_firmware()) << e.describe();
  EXPECT_EQ(e.firmware().opcode, opcode);
  EXPECT_EQ(e.firmware().status, static_cast<uint8_t>(CommandStatus::INT_ERR));
  EXPECT_EQ(e.firmware().syndrome, kSyndrome);
  EXPECT_NE(e.describe().find(driver::cmd::OpcodeName(opcode)), std::string::npos) << e.describe();
  EXPECT_EQ(sim->firmware().state(), sim::HcaState::kDisabled);
  ExpectNothingHeld(*sim);
  EXPECT_EQ(sim->dma_mappings(), 0u);
  // And the device is fine afterwards.
  auto again = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(again) << again.error().describe();
}

INSTANTIATE_TEST_SUITE_P(EveryBringUpCommand, BringUpFault,
                         ::testing::Values(prm::ENABLE_HCA, prm::QUERY_ISSI, prm::SET_ISSI,
                                           prm::QUERY_PAGES, prm::MANAGE_PAGES, prm::ACCESS_REG,
                                           prm::QUERY_HCA_CAP, prm::SET_HCA_CAP, prm::INIT_HCA,
                                           prm::SET_DRIVER_VERSION),
                         [](const auto& p) { return std::string(driver::cmd::OpcodeName(p.param)); });

TEST(BringUpFaultAccessReg, DeviceWithoutHostEndiannessRegisterIsFine) {
  auto sim = MakeDevice();
  sim->InjectFailure({.count = 1, .opcode = prm::ACCESS_REG, .status = CommandStatus::BAD_OP_ERR});
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(ctx) << ctx.error().describe();
}

// The driver's objects with failures injected; the fixture's teardown proves every failed
// call left nothing behind (no object, no DMA mapping, nothing on the device).
class ObjectFaults : public testing::DriverTest {
 protected:
  void Inject(uint16_t opcode, CommandStatus status = CommandStatus::INT_ERR, uint32_t count = 1) {
    sim_->InjectFailure({.count = count, .opcode = opcode, .status = status, .syndrome = kSyndrome});
  }
  ibv_dm* Alloc(size_t length, int type = MLX5DV_DM_TYPE_MEMIC) {
    ibv_alloc_dm_attr attr{.length = length, .log_align_req = 0, .comp_mask = 0};
    mlx5dv_alloc_dm_attr dv{};
    driver::SetDmType(dv, type);
    return v::dv_alloc_dm(verbs_, &attr, &dv);
  }

};

TEST_F(ObjectFaults, AllocMemicFailureLeavesNothing) {
  Inject(prm::ALLOC_MEMIC);
  errno = 0;
  EXPECT_EQ(Alloc(4096), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(sim_->counters().memic_allocations, 0u);
  EXPECT_EQ(ctx_->device().memic().pages_in_use(), 0u);
}

TEST_F(ObjectFaults, AllocMemicMovesOnWhenTheFirmwareSaysTryElsewhere) {
  Inject(prm::ALLOC_MEMIC, CommandStatus::NO_RES_ERR);
  Inject(prm::ALLOC_MEMIC, CommandStatus::NOT_READY);
  ibv_dm* dm = Alloc(4096);
  ASSERT_NE(dm, nullptr) << strerror(errno);
  EXPECT_EQ(sim_->counters().by_opcode.at(prm::ALLOC_MEMIC), 3u);
  EXPECT_EQ(ctx_->device().memic().pages_in_use(), 1u);
  EXPECT_EQ(v::free_dm(dm), 0);
  // Every candidate busy: ENOMEM, nothing marked.
  Inject(prm::ALLOC_MEMIC, CommandStatus::NO_RES_ERR, 1000);
  errno = 0;
  EXPECT_EQ(Alloc(4096), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(ctx_->device().memic().pages_in_use(), 0u);
}

TEST_F(ObjectFaults, CreateSwIcmFailureLeavesNothing) {
  Inject(prm::CREATE_GENERAL_OBJECT);
  errno = 0;
  EXPECT_EQ(Alloc(4096, MLX5DV_DM_TYPE_STEERING_SW_ICM), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(ctx_->device().sw_icm().blocks_in_use(), 0u);
  ibv_dm* dm = Alloc(4096, MLX5DV_DM_TYPE_STEERING_SW_ICM);  // the same blocks are free again
  ASSERT_NE(dm, nullptr);
  EXPECT_EQ(v::free_dm(dm), 0);
}

TEST_F(ObjectFaults, FreeFailureKeepsTheDmUsableAndRetryable) {
  for (int type : {MLX5DV_DM_TYPE_MEMIC, MLX5DV_DM_TYPE_STEERING_SW_ICM}) {
    ibv_dm* dm = Alloc(4096, type);
    ASSERT_NE(dm, nullptr);
    Inject(type == MLX5DV_DM_TYPE_MEMIC ? prm::DEALLOC_MEMIC : prm::DESTROY_GENERAL_OBJECT);
    EXPECT_EQ(v::free_dm(dm), EIO);
    if (type == MLX5DV_DM_TYPE_MEMIC) {
      const uint32_t word = 0x12345678;
      uint32_t back = 0;
      EXPECT_EQ(ibv_memcpy_to_dm(dm, 0, &word, 4), 0);
      EXPECT_EQ(ibv_memcpy_from_dm(&back, dm, 0, 4), 0);
      EXPECT_EQ(back, word);
      EXPECT_EQ(sim_->counters().memic_allocations, 1u);
    } else {
      EXPECT_EQ(sim_->counters().sw_icm_objects, 1u);
    }
    EXPECT_EQ(v::free_dm(dm), 0);
  }
}

TEST_F(ObjectFaults, MkeyAndPdFailures) {
  Inject(prm::ALLOC_PD);
  errno = 0;
  EXPECT_EQ(v::alloc_pd(verbs_), nullptr);
  EXPECT_EQ(errno, EIO);
  ibv_pd* pd = v::alloc_pd(verbs_);
  ibv_dm* dm = Alloc(4096);
  ASSERT_TRUE(pd && dm);

  Inject(prm::CREATE_MKEY);
  errno = 0;
  EXPECT_EQ(v::reg_dm_mr(pd, dm, 0, 4096, kRw), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(sim_->counters().mkeys, 0u);

  ibv_mr* mr = v::reg_dm_mr(pd, dm, 0, 4096, kRw);
  ASSERT_NE(mr, nullptr);
  Inject(prm::DESTROY_MKEY);
  EXPECT_EQ(v::dereg_mr(mr), EIO);
  EXPECT_EQ(v::free_dm(dm), EBUSY);  // the MR still exists, so it still pins the DM
  EXPECT_EQ(v::dereg_mr(mr), 0);

  Inject(prm::DEALLOC_PD);
  EXPECT_EQ(v::dealloc_pd(pd), EIO);
  EXPECT_EQ(sim_->counters().pds, 1u);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  EXPECT_EQ(v::free_dm(dm), 0);
}

TEST(TeardownFault, ReportsTheFirstErrorAndStillCleansUp) {
  auto sim = MakeDevice();
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(ctx);
  auto dm = ctx->AllocDm(4096);
  ASSERT_TRUE(dm);
  sim->InjectFailure({.count = 1, .opcode = prm::DEALLOC_MEMIC, .status = CommandStatus::INT_ERR,
                      .syndrome = kSyndrome});
  const auto report = ctx->Close();
  ASSERT_TRUE(report.first_error);
  EXPECT_EQ(report.first_error->firmware().opcode, prm::DEALLOC_MEMIC);
  EXPECT_NE(report.describe().find("DEALLOC_MEMIC"), std::string::npos) << report.describe();
  // TEARDOWN_HCA and DISABLE_HCA still ran: the function holds nothing.
  EXPECT_EQ(sim->firmware().state(), sim::HcaState::kDisabled);
  ExpectNothingHeld(*sim);
}

}  // namespace
}  // namespace onchip
