// The command queue transport: malformed entries and mailbox chains get delivery errors and run
// nothing; several slots at once; lost doorbells; an unreachable queue.
#include <thread>

#include "tests/device/sim/sim_fixture.h"
#include "tests/device/wait.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {
namespace {

using prm::DeliveryStatus;
using E = prm::cmd_queue_entry;
using Box = prm::cmd_if_box;

class CmdqTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
  }
  // A message long enough to need input mailboxes: SET_DRIVER_VERSION (80 bytes, 1 block).
  static prm::Message<prm::set_driver_version_in> LongInput() {
    auto v = prm::CommandIn<prm::set_driver_version_in>(prm::SET_DRIVER_VERSION);
    v.set(prm::set_driver_version_in::driver_version[0], 'x');
    return v;
  }
  // Publishes a corrupted entry for slot 0 and returns what came back; asserts nothing ran.
  Reply RunCorrupted(const CommandWriter::EntryBytes& e) {
    const uint64_t before = sim_->counters().commands;
    w_->Publish(0, e);
    w_->Ring(1);
    auto r = w_->Wait(0, std::chrono::milliseconds(5000));
    EXPECT_TRUE(r);
    EXPECT_EQ(sim_->counters().commands, before) << "a malformed command reached the firmware";
    return r ? *r : Reply{};
  }
  template <class F>
  static void Set(CommandWriter::EntryBytes& e, F f, uint64_t v) {
    prm::Bits(std::span<std::byte>(e)).set(f, v);
  }
};

TEST_F(CmdqTest, WrongTransportTypeIsCmdDescrErr) {
  auto e = *w_->Build(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16, 0);
  Set(e, E::type, 3);
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::CMD_DESCR_ERR);
}

TEST_F(CmdqTest, ReservedEntryBitIsResFldNotClr) {
  auto e = *w_->Build(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16, 0);
  e[1] = std::byte{1};
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::RES_FLD_NOT_CLR_ERR);
}

TEST_F(CmdqTest, InputLengthBeyondTheLimitIsInLengthErr) {
  auto e = *w_->Build(LongInput().bytes(), 16, 0);
  Set(e, E::input_length, (2u << 20));
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::IN_LENGTH_ERR);
}

TEST_F(CmdqTest, InputBlockTokenMismatchIsTokErr) {
  auto msg = LongInput();
  auto e = *w_->Build(msg.bytes(), 16, 0);
  prm::Bits(std::span<std::byte>(w_->host(w_->in_block(0, 0)), cmdq::kBlockBytes))
      .set(Box::token, static_cast<uint8_t>(prm::Get(std::span<const std::byte>(e), E::token) + 1));
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::TOK_ERR);
}

TEST_F(CmdqTest, BlockNumberOutOfSequenceIsBadBlkNum) {
  // MANAGE_PAGES with 100 pages: 816 bytes, two input blocks.
  auto in = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 800);
  in.set(prm::manage_pages_in::input_num_entries, 100);
  for (int i = 0; i < 100; ++i)
    in.set(prm::manage_pages_in::pas[i], CommandWriter::kArenaIova + CommandWriter::kPagePoolOffset +
                                             (1000 + i) * 4096);
  auto e = *w_->Build(in.bytes(), 16, 0);
  prm::Bits(std::span<std::byte>(w_->host(w_->in_block(0, 1)), cmdq::kBlockBytes))
      .set(Box::block_number, 5);
  const uint32_t pages = sim_->counters().pages_held;
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::BAD_BLK_NUM_ERR);
  EXPECT_EQ(sim_->counters().pages_held, pages);
}

TEST_F(CmdqTest, ChainLoopIsBadBlkNum) {
  auto in = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8 * 200);
  in.set(prm::manage_pages_in::input_num_entries, 200);
  auto e = *w_->Build(in.bytes(), 16, 0);
  // Block 1 points back at block 0 (with block 0's number kept): a loop.
  const uint64_t b0 = w_->in_block(0, 0);
  prm::Bits(std::span<std::byte>(w_->host(w_->in_block(0, 1)), cmdq::kBlockBytes))
      .set(Box::next_pointer_63_32, b0 >> 32)
      .set(Box::next_pointer_31_10, (b0 & 0xffffffffu) >> 10);
  const auto d = RunCorrupted(e).delivery;
  EXPECT_TRUE(d == DeliveryStatus::BAD_BLK_NUM_ERR) << int(d);
}

TEST_F(CmdqTest, MisalignedOrUnmappedInputPointerIsInPtrAlignErr) {
  auto e = *w_->Build(LongInput().bytes(), 16, 0);
  const uint64_t p = w_->in_block(0, 0);
  Set(e, E::input_mailbox_pointer_31_9, ((p + 512) & 0xffffffffu) >> 9);
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::IN_PTR_ALIGN_ERR);
  e = *w_->Build(LongInput().bytes(), 16, 0);
  Set(e, E::input_mailbox_pointer_63_32, 0x77);
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::IN_PTR_ALIGN_ERR);
}

TEST_F(CmdqTest, UndeliverableOutputRunsNothing) {
  // ALLOC_PD with a 600-byte output (two output blocks) whose chain points nowhere.
  auto in = prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD);
  auto e = *w_->Build(in.bytes(), 600, 0);
  Set(e, E::output_mailbox_pointer_63_32, 0x66);
  EXPECT_EQ(RunCorrupted(e).delivery, DeliveryStatus::OUT_PTR_ALIGN_ERR);
  EXPECT_EQ(sim_->counters().pds, 0u);
  // The same command with a sound chain allocates, and its long output is zero past the PD.
  auto r = w_->Run(in.bytes(), 600);
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ(r->out.size(), 600u);
  EXPECT_EQ(r->out[599], std::byte{0});
  EXPECT_EQ(sim_->counters().pds, 1u);
}

TEST_F(CmdqTest, EverySlotAtOnce) {
  const uint32_t slots = 32;
  for (uint32_t s = 0; s < slots; ++s)
    ASSERT_TRUE(w_->Post(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16, s));
  w_->Ring(0xffffffffu);
  std::set<uint64_t> pds;
  for (uint32_t s = 0; s < slots; ++s) {
    auto r = w_->Wait(s, std::chrono::milliseconds(5000));
    ASSERT_TRUE(r && r->ok());
    pds.insert(r->get(prm::alloc_pd_out::pd));
  }
  EXPECT_EQ(pds.size(), slots);
  EXPECT_EQ(sim_->counters().pds, slots);
}

TEST_F(CmdqTest, OverwrittenDoorbellStillCompletesEveryOwnedSlot) {
  ASSERT_TRUE(w_->Post(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16, 3));
  ASSERT_TRUE(w_->Post(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16, 4));
  w_->Ring(1u << 4);  // the ring for slot 3 was "lost"
  EXPECT_TRUE(w_->Wait(3, std::chrono::milliseconds(5000)).value().ok());
  EXPECT_TRUE(w_->Wait(4, std::chrono::milliseconds(5000)).value().ok());
}

TEST_F(CmdqTest, DoorbellWithoutKickIsNoticedAtTheIdlePeriod) {
  ASSERT_TRUE(w_->Post(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16, 2));
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(
                                w_->bar() + prm::initial_seg::command_doorbell_vector.bit_offset / 8))
      .store(std::byteswap(uint32_t{1} << 2));
  auto r = w_->Wait(2, std::chrono::milliseconds(2000));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok());
}

// Stores `v` big-endian at byte `off` of BAR0, as a driver (or an attacker) writes a register.
void StoreBar(std::byte* bar, uint64_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bar + off)).store(std::byteswap(v));
}
constexpr uint64_t kCmdqHigh = prm::initial_seg::cmdq_phy_addr_63_32.bit_offset / 8;
constexpr uint64_t kCmdqLow = prm::initial_seg::cmdq_phy_addr_31_12.bit_offset / 8;

// Before ENABLE_HCA the device follows cmdq_phy_addr: a queue the driver has not mapped yet is
// left alone, and served once the address names mapped memory.
class DisabledCmdqTest : public SimTest {};

TEST_F(DisabledCmdqTest, UnreachableQueueIsLeftAloneAndLaterServed) {
  std::byte* bar = w_->bar();
  StoreBar(bar, kCmdqHigh, 0x99);  // nothing mapped there
  const uint64_t completed_before = sim_->queue_counters().completed;
  ASSERT_TRUE(w_->Post(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16, 0));
  w_->Ring(1);
  // The device looked at the rung slot and found nothing mapped: it says so and leaves it.
  ASSERT_TRUE(onchip::testing::WaitUntil([&] { return sim_->queue_counters().unreachable > 0; }));
  EXPECT_TRUE(w_->Owned(0));
  EXPECT_EQ(sim_->queue_counters().completed, completed_before);
  StoreBar(bar, kCmdqHigh, static_cast<uint32_t>(CommandWriter::kArenaIova >> 32));
  StoreBar(bar, kCmdqLow, static_cast<uint32_t>(CommandWriter::kArenaIova));
  w_->Ring(1);
  EXPECT_TRUE(w_->Wait(0, std::chrono::milliseconds(5000)).value().ok());
}

// Once the function is enabled the address is latched: whoever can write BAR0 cannot point the
// firmware at a queue of its own (or at nothing, stalling every command).
TEST_F(CmdqTest, AddressWrittenAfterEnableMovesNothing) {
  std::byte* bar = w_->bar();
  StoreBar(bar, kCmdqHigh, 0x99);
  StoreBar(bar, kCmdqLow, 0);
  const uint64_t unreachable_before = sim_->queue_counters().unreachable;
  auto r = w_->Run(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 16);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(sim_->queue_counters().unreachable, unreachable_before);
}

TEST_F(CmdqTest, ZeroLengthOutputIsDeliveredWithNothingToSay) {
  auto r = w_->Run(prm::CommandIn<prm::nop_in>(prm::NOP).bytes(), 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->delivery, DeliveryStatus::OK);
  EXPECT_TRUE(r->out.empty());
}

TEST_F(CmdqTest, LongMessagesBothWays) {
  ASSERT_TRUE(Ok(*w_->GivePages(300)));  // 2416-byte input, 5 blocks
  auto q =
      Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1), 4112);  // 8 output blocks
  ASSERT_TRUE(Ok(q));
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  EXPECT_EQ(q.get(Gen::log_max_pd), DeviceConfig{}.log_max_pd);
}

}  // namespace
}  // namespace onchip::sim::testing
