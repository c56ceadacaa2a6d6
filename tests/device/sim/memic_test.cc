// ALLOC_MEMIC, DEALLOC_MEMIC, MODIFY_MEMIC, and the MEMIC window of BAR0 as real storage.
#include <sys/mman.h>

#include <cstring>

#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;

class MemicTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    start_ = sim_->layout().memic_start;
    size_ = sim_->layout().memic_size;
  }
  Reply Alloc(uint64_t size, uint32_t log_align = 0, uint64_t range_start = 0,
              uint64_t range_size = 0) {
    auto in = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
    in.set(prm::alloc_memic_in::memic_size, size)
        .set(prm::alloc_memic_in::log_memic_addr_alignment, log_align)
        .set(prm::alloc_memic_in::range_start_addr, range_start ? range_start : start_)
        .set(prm::alloc_memic_in::range_size, range_size ? range_size : size_);
    return Exec(in, 16);
  }
  Reply Dealloc(uint64_t addr, uint64_t size) {
    auto in = prm::CommandIn<prm::dealloc_memic_in>(prm::DEALLOC_MEMIC);
    in.set(prm::dealloc_memic_in::memic_start_addr, addr)
        .set(prm::dealloc_memic_in::memic_size, size);
    return Exec(in, 16);
  }
  uint64_t start_ = 0, size_ = 0;
};

TEST_F(MemicTest, AllocatesFirstFitInsideTheWindowAndFrees) {
  auto a = Alloc(64);
  ASSERT_TRUE(Ok(a));
  const uint64_t a0 = a.get(prm::alloc_memic_out::memic_start_addr);
  EXPECT_EQ(a0, start_);
  auto b = Alloc(128);
  const uint64_t b0 = b.get(prm::alloc_memic_out::memic_start_addr);
  EXPECT_EQ(b0, start_ + 64);
  EXPECT_EQ(sim_->counters().memic_allocations, 2u);
  ASSERT_TRUE(Ok(Dealloc(a0, 64)));
  // Freed space is reused.
  EXPECT_EQ(Alloc(64).get(prm::alloc_memic_out::memic_start_addr), a0);
  ASSERT_TRUE(Ok(Dealloc(a0, 64)));
  ASSERT_TRUE(Ok(Dealloc(b0, 128)));
  EXPECT_EQ(sim_->counters().memic_allocations, 0u);
}

TEST_F(MemicTest, AlignmentIsInUnitsOf64Bytes) {
  ASSERT_TRUE(Ok(Alloc(64)));
  auto r = Alloc(64, 6);  // 64 * 2^6 = 4 KiB
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(r.get(prm::alloc_memic_out::memic_start_addr), start_ + 4096);
  EXPECT_TRUE(Refused(Alloc(64, DeviceConfig{}.log_max_memic_addr_alignment + 1),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_ALIGNMENT));
}

TEST_F(MemicTest, SizeAndRangeRules) {
  EXPECT_TRUE(Refused(Alloc(0), CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_SIZE));
  EXPECT_TRUE(Refused(Alloc(100), CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_SIZE));
  EXPECT_TRUE(Refused(Alloc(size_ + 64, 0, start_, size_), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MEMIC_SIZE));
  EXPECT_TRUE(Refused(Alloc(64, 0, start_ - 4096, 4096), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MEMIC_RANGE));
  EXPECT_TRUE(Refused(Alloc(64, 0, start_ + size_ - 4096, 8192), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MEMIC_RANGE));
  EXPECT_TRUE(Refused(Alloc(8192, 0, start_, 4096), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MEMIC_RANGE));
  // The range confines the search (the kernel's per-page retry relies on this).
  auto r = Alloc(64, 0, start_ + 3 * 4096, 4096);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(r.get(prm::alloc_memic_out::memic_start_addr), start_ + 3 * 4096);
}

TEST_F(MemicTest, NoResWhenFull) {
  ASSERT_TRUE(Ok(Alloc(size_)));
  EXPECT_TRUE(Refused(Alloc(64), CommandStatus::NO_RES_ERR, Syndrome::MEMIC_FULL));
  ASSERT_TRUE(Ok(Dealloc(start_, size_)));
  ASSERT_TRUE(Ok(Alloc(64)));
}

TEST_F(MemicTest, DeallocMustNameAnAllocationExactly) {
  auto a = Alloc(256);
  const uint64_t a0 = a.get(prm::alloc_memic_out::memic_start_addr);
  EXPECT_TRUE(Refused(Dealloc(a0, 128), CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_UNKNOWN));
  EXPECT_TRUE(Refused(Dealloc(a0 + 64, 192), CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_UNKNOWN));
  ASSERT_TRUE(Ok(Dealloc(a0, 256)));
  EXPECT_TRUE(Refused(Dealloc(a0, 256), CommandStatus::BAD_PARAM_ERR, Syndrome::MEMIC_UNKNOWN));
}

TEST_F(MemicTest, WindowIsRealStorageSharedWithTheDriversMapping) {
  auto a = Alloc(4096);
  const uint64_t off = a.get(prm::alloc_memic_out::memic_start_addr);
  // The driver's view: BAR0 mapped from the fd.
  std::byte* drv = w_->bar() + off;
  std::memset(drv, 0x5a, 4096);
  auto window = sim_->bar().Memic();
  EXPECT_EQ(window[off - start_], std::byte{0x5a});
  EXPECT_EQ(window[off - start_ + 4095], std::byte{0x5a});
  // A new allocation over the same bytes starts zeroed.
  ASSERT_TRUE(Ok(Dealloc(off, 4096)));
  auto b = Alloc(4096);
  ASSERT_EQ(b.get(prm::alloc_memic_out::memic_start_addr), off);
  EXPECT_EQ(drv[0], std::byte{0});
  EXPECT_EQ(drv[4095], std::byte{0});
}

TEST_F(MemicTest, ModifyMemicIsUnsupportedMemicOperationsIsZero) {
  auto a = Alloc(64);
  auto in = prm::CommandIn<prm::modify_memic_in>(prm::MODIFY_MEMIC, prm::MODIFY_MEMIC_OP_MOD_ALLOC);
  in.set(prm::modify_memic_in::memic_start_addr, a.get(prm::alloc_memic_out::memic_start_addr))
      .set(prm::modify_memic_in::memic_operation_type, 0);
  EXPECT_TRUE(Refused(Exec(in, 64), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::MEMIC_OPERATION_UNSUPPORTED));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::modify_memic_in>(prm::MODIFY_MEMIC, 2), 64),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
}

TEST_F(MemicTest, AllocMemicHasNoUid) {
  auto in = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
  in.bytes()[3] = std::byte{1};
  in.set(prm::alloc_memic_in::memic_size, 64)
      .set(prm::alloc_memic_in::range_start_addr, start_)
      .set(prm::alloc_memic_in::range_size, size_);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
}

class SmallMemicTest : public MemicTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.memic_bar_size = 8192;
    c.max_memic_size = 8192;
    return c;
  }
};

TEST_F(SmallMemicTest, WindowSizeIsConfigurable) {
  EXPECT_EQ(size_, 8192u);
  EXPECT_EQ(sim_->bar0().size, start_ + 8192);
  ASSERT_TRUE(Ok(Alloc(8192)));
  EXPECT_TRUE(Refused(Alloc(64), CommandStatus::NO_RES_ERR, Syndrome::MEMIC_FULL));
}

class NoMemicTest : public SimTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.memic = false;
    return c;
  }
};

TEST_F(NoMemicTest, AllocMemicIsBadOp) {
  BringUp();
  auto in = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
  in.set(prm::alloc_memic_in::memic_size, 64);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_OP_ERR, Syndrome::MEMIC_UNSUPPORTED));
}

}  // namespace
}  // namespace onchip::sim::testing
