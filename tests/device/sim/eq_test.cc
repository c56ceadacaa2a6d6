// CREATE/DESTROY/QUERY_EQ: the context kept and queried back, each refusal with its status and
// syndrome and nothing changed, ownership, an EQ held by its CQs, teardown.
#include <algorithm>

#include "tests/device/sim/queues.h"
#include "tools/sim/firmware.h"
#include "uapi/prm/hca.h"

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

TEST_F(EqTest, CommandsNeedAnInitializedHca) {
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  EXPECT_TRUE(Refused(CreateEq(EqIn()), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  EXPECT_TRUE(Refused(QueryEq(0), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
}

}  // namespace
}  // namespace onchip::sim::testing
