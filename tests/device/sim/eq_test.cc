// CREATE/DESTROY/QUERY_EQ: the context kept and queried back, each refusal with its status and
// syndrome and nothing changed, ownership, an EQ held by its CQs, teardown; the counters an EQ
// keeps (fresh when its number is used again) and the consumer-index doorbell the engine takes.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "tests/device/sim/queues.h"
#include "tests/device/wait.h"
#include "tools/sim/firmware.h"
#include "tools/sim/uar_watch.h"
#include "uapi/prm/endian.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/uar_page.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_eq_in;
constexpr auto eqc = In::eq_context_entry;
using QEqc = prm::eqc_bits<prm::query_eq_out::eq_context_entry.bit_offset>;

class EqTest : public QueueTest {
 protected:
  // The refusal of `in`, after which the EQ table and the failure counter say nothing was made.
  ::testing::AssertionResult RefusedUnchanged(const prm::Message<In>& in, CommandStatus status,
                                              Syndrome syndrome) {
    const auto before = sim_->counters();
    auto r = CreateEq(in);
    auto verdict = Refused(r, status, syndrome);
    if (!verdict) return verdict;
    if (r.get(prm::create_eq_out::eq_number) != 0)
      return ::testing::AssertionFailure() << "refusal carries an eq_number";
    const auto after = sim_->counters();
    if (after.eqs != before.eqs) return ::testing::AssertionFailure() << "an EQ was made";
    if (after.commands_failed != before.commands_failed + 1)
      return ::testing::AssertionFailure() << "not counted as failed";
    return ::testing::AssertionSuccess();
  }

  // An EQ of 2^7 EQEs at kQueueIova that subscribes to PORT_CHANGE, its EQEs owned by software
  // (owner 1) as a driver leaves them before the first pass.
  uint32_t NewPortEventEq() {
    for (uint32_t i = 0; i < 128; ++i) w_->host(kQueueIova)[i * 64 + 63] = std::byte{1};
    auto in = EqIn(/*log_size=*/7, /*pages=*/2);
    in.set(In::event_bitmask[0], uint64_t{1} << prm::MLX5_EVENT_TYPE_PORT_CHANGE);
    auto r = CreateEq(in);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_eq_out::eq_number));
  }
  // EQE `index` once the device wrote it in its first pass over the ring (owner 0).
  std::optional<prm::pod::mlx5_eqe> WaitEqe(uint32_t index) {
    std::byte* p = w_->host(kQueueIova) + index * 64;
    auto written = [&] {
      return std::atomic_ref<std::byte>(p[63]).load(std::memory_order_acquire) == std::byte{0};
    };
    if (!onchip::testing::WaitUntil(written)) return std::nullopt;
    prm::pod::mlx5_eqe e;
    std::memcpy(&e, p, sizeof e);
    return e;
  }
  // The update-CI doorbell (UAR offset 0x48) of EQ `eqn` with consumer index `ci`, as a driver
  // rings it, waited for until the engine has taken it.
  ::testing::AssertionResult RingUpdateCi(uint32_t eqn, uint32_t ci) {
    auto* reg = reinterpret_cast<uint32_t*>(w_->bar() + prm::UarPageOffset(uar_) +
                                            prm::kEqDoorbellUpdateCi);
    std::atomic_ref<uint32_t>(*reg).store(prm::Be32::FromHost(eqn << 24 | (ci & 0xffffff)).raw(),
                                          std::memory_order_release);
    sim_->Kick();
    if (onchip::testing::WaitUntil([&] {
          return std::atomic_ref<uint32_t>(*reg).load(std::memory_order_acquire) ==
                 UarWatch::kConsumed32;
        }))
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the doorbell was not taken";
  }
};

TEST_F(EqTest, CreateQueryDestroyRoundTrip) {
  auto in = EqIn(/*log_size=*/7, /*pages=*/2);
  in.set(eqc.st, prm::EQ_CQ_STATE_ARMED).set(eqc.oi, 1).set(In::event_bitmask[0], 0x3f);
  auto r = CreateEq(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t eqn = static_cast<uint32_t>(r.get(prm::create_eq_out::eq_number));
  EXPECT_EQ(sim_->counters().eqs, 1u);

  auto q = QueryEq(eqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QEqc::log_eq_size), 7u);
  EXPECT_EQ(q.get(QEqc::uar_page), uar_);
  EXPECT_EQ(q.get(QEqc::intr), 1u);
  EXPECT_EQ(q.get(QEqc::st), prm::EQ_CQ_STATE_ARMED);
  EXPECT_EQ(q.get(QEqc::oi), 1u);
  EXPECT_EQ(q.get(QEqc::consumer_counter), 0u);
  EXPECT_EQ(q.get(QEqc::producer_counter), 0u);
  EXPECT_EQ(q.get(prm::query_eq_out::event_bitmask), 0x3fu);
  EXPECT_EQ(q.get(prm::query_eq_out::pas[0]), kQueueIova);
  EXPECT_EQ(q.get(prm::query_eq_out::pas[1]), kQueueIova + 4096);
  EXPECT_EQ(q.get(prm::query_eq_out::pas[2]), 0u);

  // A second EQ gets another number.
  const uint32_t eqn2 = NewEq();
  EXPECT_NE(eqn2, eqn);
  ASSERT_TRUE(Ok(DestroyEq(eqn)));
  ASSERT_TRUE(Ok(DestroyEq(eqn2)));
  EXPECT_EQ(sim_->counters().eqs, 0u);
  EXPECT_TRUE(Refused(QueryEq(eqn), CommandStatus::BAD_RES_ERR, Syndrome::EQ_UNKNOWN));
  EXPECT_TRUE(Refused(DestroyEq(eqn), CommandStatus::BAD_RES_ERR, Syndrome::EQ_UNKNOWN));
}

TEST_F(EqTest, OnePageHoldsASmallEqAndLargePagesAreCounted) {
  // 2^5 * 64 = 2 KiB: one 4 KiB page.
  ASSERT_TRUE(Ok(CreateEq(EqIn(5, 1))));
  // 2^8 * 64 = 16 KiB in 8 KiB pages: two pages, each 8 KiB aligned.
  ASSERT_TRUE(Ok(CreateEq(EqIn(8, 2, 1))));
  // A 16 MiB page at the arena's start reaches past the 8 MiB mapping, but the 2 KiB queue in it
  // does not: only the queue's bytes must be mapped.
  auto huge = EqIn(5, 1, 12);
  huge.set(In::pas[0], CommandWriter::kArenaIova);
  ASSERT_TRUE(Ok(CreateEq(huge)));
}

TEST_F(EqTest, SizeAboveTheCapIsRefused) {
  auto in = EqIn(7, 2);
  in.set(eqc.log_eq_size, 23);  // log_max_eq_sz is 22
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_SIZE));
}

TEST_F(EqTest, UarMustBeAllocatedAndOwned) {
  auto in = EqIn();
  in.set(eqc.uar_page, uar_ + 1);
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_RES_ERR, Syndrome::EQ_UAR_UNKNOWN));
  const uint32_t uar7 = AllocUar(7);
  auto other = EqIn();
  other.set(eqc.uar_page, uar7);
  EXPECT_TRUE(RefusedUnchanged(other, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  // The same UAR with its owner's uid is fine.
  auto own = EqIn(7, 2, 0, 7);
  own.set(eqc.uar_page, uar7);
  EXPECT_TRUE(Ok(CreateEq(own)));
}

TEST_F(EqTest, InterruptVectorMustExist) {
  auto in = EqIn();
  const uint32_t vectors = sim_->config().num_interrupt_vectors;  // 0 .. vectors - 1
  in.set(eqc.intr, vectors);
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_INTR));
  in.set(eqc.intr, vectors - 1);
  EXPECT_TRUE(Ok(CreateEq(in)));
}

TEST_F(EqTest, PageSizeAndOffset) {
  auto big = EqIn();
  big.set(eqc.log_page_size, 28);
  EXPECT_TRUE(RefusedUnchanged(big, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAGE_SIZE));
  auto off = EqIn();
  off.set(eqc.page_offset, 1);
  EXPECT_TRUE(RefusedUnchanged(off, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAGE_OFFSET));
}

TEST_F(EqTest, PageListMustMatchAlignAndBeMapped) {
  // 2^7 * 64 = 8 KiB needs two pages: one or three is wrong.
  auto few = EqIn(7, 1);
  EXPECT_TRUE(RefusedUnchanged(few, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_COUNT));
  auto many = EqIn(7, 3);
  EXPECT_TRUE(RefusedUnchanged(many, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_COUNT));
  auto unaligned = EqIn(7, 2);
  unaligned.set(In::pas[1], kQueueIova + 64);
  EXPECT_TRUE(RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_ENTRY));
  auto flags = EqIn(7, 2);
  flags.set(In::pas[0], kQueueIova | 1);
  EXPECT_TRUE(RefusedUnchanged(flags, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_ENTRY));
  auto unmapped = EqIn(7, 2);
  unmapped.set(In::pas[1], kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_UNMAPPED));
  // 8 KiB pages: a 4 KiB-aligned address is not page aligned.
  auto large = EqIn(8, 2, 1);
  large.set(In::pas[1], kQueueIova + 4096);
  EXPECT_TRUE(RefusedUnchanged(large, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_PAS_ENTRY));
}

TEST_F(EqTest, StateAndUnsupportedFields) {
  auto fired = EqIn();
  fired.set(eqc.st, prm::EQ_CQ_STATE_FIRED);
  EXPECT_TRUE(RefusedUnchanged(fired, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_STATE));
  auto status = EqIn();
  status.set(eqc.status, 1);
  EXPECT_TRUE(RefusedUnchanged(status, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_STATE));
  auto ec = EqIn();
  ec.set(eqc.ec, 1);
  EXPECT_TRUE(RefusedUnchanged(ec, CommandStatus::BAD_PARAM_ERR, Syndrome::EQ_UNSUPPORTED));
  auto always = EqIn();
  always.set(eqc.st, prm::EQ_STATE_ALWAYS_ARMED);
  EXPECT_TRUE(Ok(CreateEq(always)));
}

TEST_F(EqTest, ReservedBitsOpModAndLengths) {
  auto reserved = EqIn();
  reserved.set(prm::Field<eqc.bit_offset + 0x20, 32, "eqc.reserved_at_20">{}, 1);
  EXPECT_TRUE(
      RefusedUnchanged(reserved, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto opmod = EqIn();
  opmod.set(In::op_mod, 1);
  EXPECT_TRUE(RefusedUnchanged(opmod, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  // Output shorter than create_eq_out.
  const auto before = sim_->counters().eqs;
  EXPECT_TRUE(Refused(Exec(EqIn(), 8), CommandStatus::BAD_OUTP_LEN_ERR,
                      Syndrome::OUTPUT_TOO_SHORT));
  EXPECT_EQ(sim_->counters().eqs, before);
}

TEST_F(EqTest, EveryNumberInUseIsNoResources) {
  // 2^log_max_eq, max_num_eqs and the 8-bit eq_number all bound them.
  const uint32_t eqs = EqCount(sim_->config());
  ASSERT_EQ(eqs, std::min<uint32_t>(uint32_t{1} << sim_->config().log_max_eq,
                                    sim_->config().max_num_eqs));
  for (uint32_t i = 0; i < eqs; ++i) ASSERT_TRUE(Ok(CreateEq(EqIn(4, 1)))) << i;
  EXPECT_TRUE(RefusedUnchanged(EqIn(), CommandStatus::NO_RES_ERR, Syndrome::EQ_EXHAUSTED));
}

TEST_F(EqTest, DestroyChecksOwnerAndCqs) {
  const uint32_t eqn = NewEq();
  EXPECT_TRUE(Refused(DestroyEq(eqn, 3), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  const uint32_t cqn = NewCq(eqn);
  EXPECT_TRUE(Refused(DestroyEq(eqn), CommandStatus::RES_BUSY, Syndrome::EQ_BUSY));
  EXPECT_EQ(sim_->counters().eqs, 1u);
  ASSERT_TRUE(Ok(DestroyCq(cqn)));
  ASSERT_TRUE(Ok(DestroyEq(eqn)));
  EXPECT_EQ(sim_->counters().eqs, 0u);
}

TEST_F(EqTest, UserContextEqIsItsOwn) {
  const uint32_t uar7 = AllocUar(7);
  auto in = EqIn(7, 2, 0, 7);
  in.set(eqc.uar_page, uar7);
  auto r = CreateEq(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t eqn = static_cast<uint32_t>(r.get(prm::create_eq_out::eq_number));
  EXPECT_TRUE(Refused(DestroyEq(eqn, 0), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Ok(DestroyEq(eqn, 7)));
}

TEST_F(EqTest, TeardownRefusesLiveEqsAndForceFreesThem) {
  const uint32_t eqn = NewEq();
  NewCq(eqn);
  auto graceful = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  EXPECT_TRUE(Refused(Exec(graceful, 16), CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  EXPECT_EQ(sim_->counters().eqs, 1u);
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  EXPECT_EQ(sim_->counters().eqs, 0u);
  EXPECT_EQ(sim_->counters().cqs, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
  // After INIT_HCA the numbers start over.
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16)));
  uar_ = AllocUar(0);
  EXPECT_EQ(NewEq(), eqn);
}

TEST_F(EqTest, CountersFollowEventsAndDoorbellsAndStartOverWithTheNumber) {
  const uint32_t eqn = NewPortEventEq();
  sim_->SetLinkUp(false);  // a PORT_CHANGE EQE
  const auto eqe = WaitEqe(0);
  ASSERT_TRUE(eqe);
  EXPECT_EQ(eqe->type, prm::MLX5_EVENT_TYPE_PORT_CHANGE);
  ASSERT_TRUE(RingUpdateCi(eqn, 1));
  auto q = QueryEq(eqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QEqc::producer_counter), 1u);
  EXPECT_EQ(q.get(QEqc::consumer_counter), 1u);
  // The same number again is a new EQ: nothing produced or consumed yet.
  ASSERT_TRUE(Ok(DestroyEq(eqn)));
  ASSERT_EQ(NewPortEventEq(), eqn);
  q = QueryEq(eqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QEqc::producer_counter), 0u);
  EXPECT_EQ(q.get(QEqc::consumer_counter), 0u);
}

// A consumer index ahead of the EQEs written is a forged or buggy doorbell: taken, it would make
// the EQ look full and lose every later event. The engine ignores it.
TEST_F(EqTest, ConsumerIndexAheadOfTheProducerIsIgnored) {
  const uint32_t eqn = NewPortEventEq();
  sim_->SetLinkUp(false);  // a PORT_CHANGE EQE
  ASSERT_TRUE(WaitEqe(0));
  ASSERT_TRUE(RingUpdateCi(eqn, 5));  // one EQE written: 5 is four ahead
  auto q = QueryEq(eqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QEqc::consumer_counter), 0u);
  // The next event still arrives.
  sim_->SetLinkUp(true);
  const auto eqe = WaitEqe(1);
  ASSERT_TRUE(eqe);
  EXPECT_EQ(eqe->type, prm::MLX5_EVENT_TYPE_PORT_CHANGE);
  EXPECT_EQ(eqe->sub_type, prm::MLX5_PORT_CHANGE_SUBTYPE_ACTIVE);
  q = QueryEq(eqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QEqc::producer_counter), 2u);
}

TEST_F(EqTest, CommandsNeedAnInitializedHca) {
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  EXPECT_TRUE(Refused(CreateEq(EqIn()), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  EXPECT_TRUE(Refused(QueryEq(0), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
}

}  // namespace
}  // namespace onchip::sim::testing
