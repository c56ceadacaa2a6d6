// The hardware's contract for send work, on one software ConnectX: the engine starts a WQE when
// software rings the UAR doorbell (a bfreg of the QP's UAR page, either half), not when the
// doorbell record alone says it exists; and a doorbell rung at any moment, including just
// after the device thread looked or while a pass runs, is never lost.
#include <chrono>
#include <thread>

#include "tests/device/sim/node_test.h"

namespace onchip::sim::testing {
namespace {

using namespace std::chrono_literals;

using EngineUarDoorbellTest = RcPairTest;

// A device that stays awake for the whole test once it has work (20 s of idleness before it
// sleeps), and does not wake for a periodic look within it. Going to sleep runs one full pass
// (the look before sleeping), so a test expects what a doorbell starts within kPrompt, well
// inside the idle period: a pass run for another reason cannot pass for the doorbell's.
class AwakeEngineTest : public EngineUarDoorbellTest {
 protected:
  static constexpr std::chrono::milliseconds kPrompt{1000};
  DeviceConfig Config() const override {
    DeviceConfig c;
    // Awake whatever else the machine runs: these tests are of the awake engine's look.
    c.engine_spin = DeviceConfig::Spin::kAlways;
    c.engine_idle_period = 20s;
    c.idle_poll_period = 60'000ms;
    return c;
  }
};

// The engine awake and looking, a WQE and its doorbell record written, the UAR doorbell not
// rung: nothing runs it. What else could run a full pass in this window, and why nothing does:
// one device, no other QP traffic, no command, no CQ or EQ doorbell, no kick; no QP in error
// (one with a receive ring is looked at again every 100 us, since receive posts ring nothing);
// no retry or moderation deadline (the NOP before completed locally); and the pass after that
// NOP's found nothing, which ends the run of full passes that progress keeps going.
TEST_F(AwakeEngineTest, RecordWithoutTheUarDoorbellWaitsForTheDoorbell) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {});
  ASSERT_TRUE(node_->Poll(cq_a_));
  const Node::WrittenWqe w = node_->WriteSendWqe(a_, prm::MLX5_OPCODE_NOP, {});
  const uint64_t wakeups = sim_->wakeups();
  std::this_thread::sleep_for(50ms);
  // The thread was awake and looking the whole time ...
  EXPECT_FALSE(sim_->engine_sleeping());
  EXPECT_GT(sim_->wakeups(), wakeups + 20);
  // ... and the record alone started nothing.
  EXPECT_FALSE(node_->TryPoll(cq_a_)) << "a WQE whose UAR doorbell was not rung was executed";
  node_->RingSend(w);
  auto c = node_->Poll(cq_a_, kPrompt);
  ASSERT_TRUE(c) << "the UAR doorbell was not noticed";
  EXPECT_EQ(c->opcode(), prm::MLX5_CQE_REQ);
  EXPECT_EQ(c->wqe_counter(), w.index);
}

// A QP does not tell the device which bfreg of its UAR page it rings, nor which half: every one
// is watched.
TEST_F(AwakeEngineTest, EveryBfregAndBothHalvesRing) {
  ConnectBoth();
  node_->PostSend(a_, prm::MLX5_OPCODE_NOP, {});
  ASSERT_TRUE(node_->Poll(cq_a_));
  for (uint32_t bfreg = 0; bfreg < prm::MLX5_BFREGS_PER_UAR; ++bfreg)
    for (uint32_t half = 0; half < 2; ++half) {
      const Node::WrittenWqe w = node_->WriteSendWqe(a_, prm::MLX5_OPCODE_NOP, {});
      node_->RingSend(w, bfreg, half);
      auto c = node_->Poll(cq_a_, kPrompt);
      ASSERT_TRUE(c) << "bfreg " << bfreg << " half " << half;
      EXPECT_EQ(c->wqe_counter(), w.index);
    }
}

// A QP reset to RST starts its WQE counter again at 0, so its first doorbell afterwards repeats,
// bit for bit, the one it rang first before. The device consumes what it takes from a register
// (it does not just compare with the last value it saw), so the repeat is a ring.
TEST_F(AwakeEngineTest, TheSameDoorbellWordAfterAResetRingsAgain) {
  ConnectBoth();
  const Node::WrittenWqe first = node_->WriteSendWqe(a_, prm::MLX5_OPCODE_NOP, {});
  node_->RingSend(first);
  ASSERT_TRUE(node_->Poll(cq_a_));
  node_->ToReset(a_);
  node_->Connect(a_, PathTo(b_.qpn));
  // Let the passes the commands caused end before the doorbell, so only the doorbell can start
  // the WQE.
  std::this_thread::sleep_for(20ms);
  const Node::WrittenWqe again = node_->WriteSendWqe(a_, prm::MLX5_OPCODE_NOP, {});
  ASSERT_EQ(again.first8, first.first8);
  node_->RingSend(again);
  auto c = node_->Poll(cq_a_, kPrompt);
  ASSERT_TRUE(c) << "a doorbell equal to the last one taken was not noticed";
  EXPECT_EQ(c->wqe_counter(), 0u);
}

// The default policy (spin, nap, sleep after an idle millisecond): 100,000 8-byte RDMA WRITE
// ping-pongs, each side writing when the other's completion arrived. A doorbell rung just after
// a look, or while a pass runs, must be seen by the next look: a lost one stalls the loop.
TEST_F(EngineUarDoorbellTest, HundredThousandPingPongsNeverStall) {
  ConnectBoth();
  constexpr int kRounds = 100'000;
  for (int i = 0; i < kRounds; ++i) {
    const bool from_a = i % 2 == 0;
    Node::QpInfo& q = from_a ? a_ : b_;
    Node::CqInfo& cq = from_a ? cq_a_ : cq_b_;
    node_->PostSend(q, prm::MLX5_OPCODE_RDMA_WRITE,
                    Cat({RaddrSeg(from_a ? kDst : kSrc + 0x100, key_), DataSeg(key_, from_a ? kSrc : kDst, 8)}));
    std::optional<Cqe> c;
    const auto give_up = std::chrono::steady_clock::now() + 5s;
    while (!(c = node_->TryPoll(cq)) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
    ASSERT_TRUE(c) << "ping-pong " << i << " stalled";
    ASSERT_EQ(c->opcode(), prm::MLX5_CQE_REQ) << "ping-pong " << i;
  }
}

}  // namespace
}  // namespace onchip::sim::testing
