// CREATE/DESTROY/QUERY/MODIFY_CQ: the context and page list kept and queried back, each refusal
// with its status and syndrome and nothing changed, ownership of the CQ, its UAR and its EQ,
// moderation through MODIFY_CQ, resize (the resize CQE in the old ring, the new ring's pages,
// the unpolled-CQE bound), teardown.
#include <cstring>

#include "tests/device/sim/queues.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/hca.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_cq_in;
constexpr auto cqc = In::cq_context;
using QCqc = prm::cqc_bits<prm::query_cq_out::cq_context.bit_offset>;
using MCqc = prm::cqc_bits<prm::modify_cq_in::cq_context.bit_offset>;

class CqTest : public QueueTest {
 protected:
  void SetUp() override {
    QueueTest::SetUp();
    eqn_ = NewEq();
  }
  ::testing::AssertionResult RefusedUnchanged(const prm::Message<In>& in, CommandStatus status,
                                              Syndrome syndrome) {
    const auto before = sim_->counters();
    auto r = CreateCq(in);
    auto verdict = Refused(r, status, syndrome);
    if (!verdict) return verdict;
    if (r.get(prm::create_cq_out::cqn) != 0)
      return ::testing::AssertionFailure() << "refusal carries a cqn";
    const auto after = sim_->counters();
    if (after.cqs != before.cqs) return ::testing::AssertionFailure() << "a CQ was made";
    if (after.commands_failed != before.commands_failed + 1)
      return ::testing::AssertionFailure() << "not counted as failed";
    return ::testing::AssertionSuccess();
  }
  prm::Message<prm::modify_cq_in> Modify(uint32_t cqn, uint32_t select, uint16_t uid = 0) {
    auto in = prm::CommandIn<prm::modify_cq_in>(prm::MODIFY_CQ);
    in.set(prm::modify_cq_in::cqn, cqn)
        .set(prm::modify_cq_in::uid, uid)
        .set(prm::modify_cq_in::modify_field_select_resize_field_select, select);
    return in;
  }
  uint32_t eqn_ = 0;
};

TEST_F(CqTest, CreateQueryDestroyRoundTrip) {
  auto in = CqIn(eqn_, /*log_size=*/7, /*pages=*/2);
  in.set(cqc.cq_period, 16).set(cqc.cq_max_count, 8);
  auto r = CreateCq(in);
  ASSERT_TRUE(Ok(r));
  const uint32_t cqn = static_cast<uint32_t>(r.get(prm::create_cq_out::cqn));
  EXPECT_EQ(sim_->counters().cqs, 1u);

  auto q = QueryCq(cqn);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QCqc::log_cq_size), 7u);
  EXPECT_EQ(q.get(QCqc::cqe_sz), 0u);
  EXPECT_EQ(q.get(QCqc::uar_page), uar_);
  EXPECT_EQ(q.get(QCqc::c_eqn_or_apu_element), eqn_);
  EXPECT_EQ(q.get(QCqc::dbr_addr), kDbrIova);
  EXPECT_EQ(q.get(QCqc::cq_period), 16u);
  EXPECT_EQ(q.get(QCqc::cq_max_count), 8u);
  EXPECT_EQ(q.get(QCqc::st), 0u);
  EXPECT_EQ(q.get(QCqc::producer_counter), 0u);
  EXPECT_EQ(q.get(QCqc::consumer_counter), 0u);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[0]), kQueueIova);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[1]), kQueueIova + 4096);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[2]), 0u);

  const uint32_t cqn2 = NewCq(eqn_);
  EXPECT_NE(cqn2, cqn);
  ASSERT_TRUE(Ok(DestroyCq(cqn)));
  ASSERT_TRUE(Ok(DestroyCq(cqn2)));
  EXPECT_EQ(sim_->counters().cqs, 0u);
  EXPECT_TRUE(Refused(QueryCq(cqn), CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN));
  EXPECT_TRUE(Refused(DestroyCq(cqn), CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN));
  ASSERT_TRUE(Ok(DestroyEq(eqn_)));
}

TEST_F(CqTest, BigCqesNeedTwiceThePages) {
  // 2^7 * 128 = 16 KiB: four pages; two are too few.
  auto two = CqIn(eqn_, 7, 2);
  two.set(cqc.cqe_sz, 1);
  EXPECT_TRUE(RefusedUnchanged(two, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAS_COUNT));
  auto four = CqIn(eqn_, 7, 4);
  four.set(cqc.cqe_sz, 1);
  ASSERT_TRUE(Ok(CreateCq(four)));
  auto bad = CqIn(eqn_, 7, 4);
  bad.set(cqc.cqe_sz, 2);
  EXPECT_TRUE(RefusedUnchanged(bad, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_CQE_SIZE));
}

TEST_F(CqTest, SizeAboveTheCapIsRefused) {
  auto in = CqIn(eqn_);
  in.set(cqc.log_cq_size, 23);  // log_max_cq_sz is 22
  EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_SIZE));
}

TEST_F(CqTest, UarMustBeAllocatedAndOwned) {
  auto unknown = CqIn(eqn_);
  unknown.set(cqc.uar_page, uar_ + 1);
  EXPECT_TRUE(RefusedUnchanged(unknown, CommandStatus::BAD_RES_ERR, Syndrome::CQ_UAR_UNKNOWN));
  auto other = CqIn(eqn_);
  other.set(cqc.uar_page, AllocUar(5));
  EXPECT_TRUE(RefusedUnchanged(other, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
}

TEST_F(CqTest, EqMustBeLiveAndTheUidsOrShared) {
  auto unknown = CqIn(eqn_ + 1);
  EXPECT_TRUE(RefusedUnchanged(unknown, CommandStatus::BAD_RES_ERR, Syndrome::CQ_EQ_UNKNOWN));
  // A user context (uid 5) may use the kernel's EQ (uid 0) ...
  const uint32_t uar5 = AllocUar(5);
  auto user = CqIn(eqn_, 7, 2, 5);
  user.set(cqc.uar_page, uar5);
  auto r = CreateCq(user);
  ASSERT_TRUE(Ok(r));
  // ... but not another user context's (uid 6).
  const uint32_t uar6 = AllocUar(6);
  auto eq6 = EqIn(7, 2, 0, 6);
  eq6.set(prm::create_eq_in::eq_context_entry.uar_page, uar6);
  auto e = CreateEq(eq6);
  ASSERT_TRUE(Ok(e));
  auto cross = CqIn(static_cast<uint32_t>(e.get(prm::create_eq_out::eq_number)), 7, 2, 5);
  cross.set(cqc.uar_page, uar5);
  EXPECT_TRUE(RefusedUnchanged(cross, CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  // The user CQ is its creator's to destroy and to modify.
  const uint32_t cqn = static_cast<uint32_t>(r.get(prm::create_cq_out::cqn));
  EXPECT_TRUE(Refused(DestroyCq(cqn, 0), CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Refused(Exec(Modify(cqn, prm::CQ_MODIFY_COUNT, 6), 16),
                      CommandStatus::BAD_RES_ERR, Syndrome::NOT_OWNER));
  EXPECT_TRUE(Ok(DestroyCq(cqn, 5)));
}

TEST_F(CqTest, PageSizeOffsetAndPageList) {
  auto big = CqIn(eqn_);
  big.set(cqc.log_page_size, 28);
  EXPECT_TRUE(RefusedUnchanged(big, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAGE_SIZE));
  auto off = CqIn(eqn_);
  off.set(cqc.page_offset, 2);
  EXPECT_TRUE(RefusedUnchanged(off, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAGE_OFFSET));
  EXPECT_TRUE(
      RefusedUnchanged(CqIn(eqn_, 7, 3), CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAS_COUNT));
  auto unaligned = CqIn(eqn_);
  unaligned.set(In::pas[0], kQueueIova + 8);
  EXPECT_TRUE(RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAS_ENTRY));
  auto unmapped = CqIn(eqn_);
  unmapped.set(In::pas[1], kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAS_UNMAPPED));
}

TEST_F(CqTest, DoorbellRecordAlignedAndMapped) {
  auto unaligned = CqIn(eqn_);
  unaligned.set(cqc.dbr_addr, kDbrIova + 4);
  EXPECT_TRUE(
      RefusedUnchanged(unaligned, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_DBR_ALIGNMENT));
  auto unmapped = CqIn(eqn_);
  unmapped.set(cqc.dbr_addr, kUnmappedIova);
  EXPECT_TRUE(
      RefusedUnchanged(unmapped, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_DBR_UNMAPPED));
  // The last 8 bytes of the mapping are a valid record; 8 bytes past it are not.
  auto last = CqIn(eqn_);
  last.set(cqc.dbr_addr, CommandWriter::kArenaIova + CommandWriter::kArenaBytes - 8);
  EXPECT_TRUE(Ok(CreateCq(last)));
  auto past = CqIn(eqn_);
  past.set(cqc.dbr_addr, CommandWriter::kArenaIova + CommandWriter::kArenaBytes);
  EXPECT_TRUE(RefusedUnchanged(past, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_DBR_UNMAPPED));
}

TEST_F(CqTest, UnsupportedFeaturesAreNamed) {
  const auto each = {
      std::pair{"cqe_comp_en", 0}, {"apu_cq", 1}, {"dbr_umem_valid", 2}, {"cq_umem_valid", 3},
      {"oi", 4}, {"cc", 5}, {"scqe_break_moderation_en", 6}, {"cq_period_mode", 7},
      {"mini_cqe_res_format", 8}, {"cqe_compression_layout", 9}};
  for (const auto& [name, which] : each) {
    auto in = CqIn(eqn_);
    switch (which) {
      case 0: in.set(cqc.cqe_comp_en, 1); break;
      case 1: in.set(cqc.apu_cq, 1); break;
      case 2: in.set(cqc.dbr_umem_valid, 1); break;
      case 3: in.set(In::cq_umem_valid, 1); break;
      case 4: in.set(cqc.oi, 1); break;
      case 5: in.set(cqc.cc, 1); break;
      case 6: in.set(cqc.scqe_break_moderation_en, 1); break;
      case 7: in.set(cqc.cq_period_mode, 1); break;
      case 8: in.set(cqc.mini_cqe_res_format, 1); break;
      case 9: in.set(cqc.cqe_compression_layout, 1); break;
    }
    EXPECT_TRUE(RefusedUnchanged(in, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_UNSUPPORTED))
        << name;
  }
}

TEST_F(CqTest, StateAndCountersAreTheDevices) {
  auto armed = CqIn(eqn_);
  armed.set(cqc.st, prm::EQ_CQ_STATE_ARMED);
  EXPECT_TRUE(RefusedUnchanged(armed, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_STATE));
  auto produced = CqIn(eqn_);
  produced.set(cqc.producer_counter, 3);
  EXPECT_TRUE(RefusedUnchanged(produced, CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_STATE));
}

TEST_F(CqTest, ReservedBitsAndOpMod) {
  auto reserved = CqIn(eqn_);
  reserved.set(prm::Field<cqc.bit_offset + 0x180, 64, "cqc.reserved_at_180">{}, 1);
  EXPECT_TRUE(
      RefusedUnchanged(reserved, CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto opmod = CqIn(eqn_);
  opmod.set(In::op_mod, 1);
  EXPECT_TRUE(RefusedUnchanged(opmod, CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
}

// A device with 4 CQ numbers (log_max_cq 2) is quicker to fill than the default 4096.
class SmallCqTest : public CqTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.log_max_cq = 2;
    return c;
  }
};

TEST_F(SmallCqTest, EveryNumberInUseIsNoResources) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Ok(CreateCq(CqIn(eqn_)))) << i;
  EXPECT_TRUE(RefusedUnchanged(CqIn(eqn_), CommandStatus::NO_RES_ERR, Syndrome::CQ_EXHAUSTED));
}

TEST_F(CqTest, ModifyChangesModerationOnly) {
  const uint32_t cqn = NewCq(eqn_);
  auto period = Modify(cqn, prm::CQ_MODIFY_PERIOD);
  period.set(MCqc::cq_period, 100).set(MCqc::cq_max_count, 50);  // count not selected
  ASSERT_TRUE(Ok(Exec(period, 16)));
  auto q = QueryCq(cqn);
  EXPECT_EQ(q.get(QCqc::cq_period), 100u);
  EXPECT_EQ(q.get(QCqc::cq_max_count), 0u);
  auto both = Modify(cqn, prm::CQ_MODIFY_PERIOD | prm::CQ_MODIFY_COUNT);
  both.set(MCqc::cq_period, 7).set(MCqc::cq_max_count, 9).set(MCqc::log_cq_size, 3);
  ASSERT_TRUE(Ok(Exec(both, 16)));
  q = QueryCq(cqn);
  EXPECT_EQ(q.get(QCqc::cq_period), 7u);
  EXPECT_EQ(q.get(QCqc::cq_max_count), 9u);
  EXPECT_EQ(q.get(QCqc::log_cq_size), 7u);  // not a selectable field

  for (uint32_t bit : {uint32_t{prm::CQ_MODIFY_OVERRUN}, uint32_t{prm::CQ_MODIFY_EQN},
                       uint32_t{prm::CQ_MODIFY_PERIOD_MODE},
                       uint32_t{1} << 20}) {
    auto m = Modify(cqn, bit | prm::CQ_MODIFY_COUNT);
    m.set(MCqc::cq_max_count, 1);
    EXPECT_TRUE(Refused(Exec(m, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_MODIFY_FIELD))
        << bit;
  }
  auto bad_op_mod = Modify(cqn, prm::CQ_MODIFY_COUNT);
  bad_op_mod.set(prm::modify_cq_in::op_mod, 2);
  EXPECT_TRUE(Refused(Exec(bad_op_mod, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  auto reserved = Modify(cqn, prm::CQ_MODIFY_COUNT);
  reserved.set(prm::Field<MCqc::bit_offset + 0x20, 32, "cqc.reserved_at_20">{}, 1);
  EXPECT_TRUE(Refused(Exec(reserved, 16), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::RESERVED_NOT_ZERO));
  // Nothing of the refused ones landed.
  q = QueryCq(cqn);
  EXPECT_EQ(q.get(QCqc::cq_max_count), 9u);
  EXPECT_EQ(q.get(QCqc::log_cq_size), 7u);
  EXPECT_TRUE(Refused(Exec(Modify(cqn + 1, prm::CQ_MODIFY_COUNT), 16),
                      CommandStatus::BAD_RES_ERR, Syndrome::CQ_UNKNOWN));
}

constexpr uint32_t kAllResizeFields = prm::MLX5_MODIFY_CQ_MASK_LOG_SIZE |
                                      prm::MLX5_MODIFY_CQ_MASK_PG_OFFSET |
                                      prm::MLX5_MODIFY_CQ_MASK_PG_SIZE;

TEST_F(CqTest, ResizeSwitchesRingsAtAResizeCqe) {
  // 128 CQEs in two pages at kQueueIova; the new rings lie past them.
  const uint32_t cqn = NewCq(eqn_);
  constexpr uint64_t kBigRing = kQueueIova + 4 * 4096;  // 256 CQEs, four pages
  constexpr uint64_t kTinyRing = kQueueIova + 8 * 4096;  // 1 CQE, one page
  auto resize = [&](uint32_t log_size, uint64_t iova, uint32_t pages, uint32_t select = kAllResizeFields) {
    auto in = prm::CommandIn<prm::modify_cq_in>(prm::MODIFY_CQ, prm::CQ_OPMOD_RESIZE, pages * 8);
    in.set(prm::modify_cq_in::op_mod, prm::CQ_OPMOD_RESIZE)
        .set(prm::modify_cq_in::cqn, cqn)
        .set(prm::modify_cq_in::modify_field_select_resize_field_select, select)
        .set(MCqc::log_cq_size, log_size);
    for (uint32_t i = 0; i < pages; ++i)
      in.set(prm::modify_cq_in::pas[i], iova + uint64_t{i} * 4096);
    return Exec(in, 16);
  };
  std::memset(w_->host(kDbrIova), 0, 8);
  std::memset(w_->host(kQueueIova), 0, 12 * 4096);

  // Refusals change nothing: a page too few, a select bit resize does not take.
  EXPECT_TRUE(Refused(resize(8, kBigRing, 3), CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_PAS_COUNT));
  EXPECT_TRUE(Refused(resize(8, kBigRing, 4, kAllResizeFields | (1u << 3)), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::CQ_MODIFY_FIELD));
  EXPECT_TRUE(Refused(resize(23, kBigRing, 4), CommandStatus::BAD_PARAM_ERR, Syndrome::CQ_SIZE));
  EXPECT_TRUE(Refused(resize(8, kUnmappedIova, 4), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::CQ_PAS_UNMAPPED));
  EXPECT_EQ(QueryCq(cqn).get(QCqc::producer_counter), 0u);

  // Grow: the resize CQE takes count 0 in the old ring (first pass: owner 0).
  ASSERT_TRUE(Ok(resize(8, kBigRing, 4)));
  EXPECT_EQ(uint8_t(w_->host(kQueueIova)[63]), prm::CqeOpOwn(prm::MLX5_CQE_RESIZE_CQ, false));
  auto q = QueryCq(cqn);
  EXPECT_EQ(q.get(QCqc::log_cq_size), 8u);
  EXPECT_EQ(q.get(QCqc::producer_counter), 1u);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[0]), kBigRing);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[3]), kBigRing + 3 * 4096);

  // Software has not consumed the resize CQE: one unpolled CQE does not fit a 1-CQE ring.
  EXPECT_TRUE(Refused(resize(0, kTinyRing, 1), CommandStatus::BAD_SIZE_OUTS_CQES_ERR,
                      Syndrome::CQ_RESIZE_OUTSTANDING));
  // Consumer index 1 (big-endian in the record's first word): now it does.
  const uint8_t ci_one[4] = {0, 0, 0, 1};
  std::memcpy(w_->host(kDbrIova), ci_one, 4);
  ASSERT_TRUE(Ok(resize(0, kTinyRing, 1)));
  // Count 1 in the 256-CQE ring: slot 1, still the first pass.
  EXPECT_EQ(uint8_t(w_->host(kBigRing + 64)[63]), prm::CqeOpOwn(prm::MLX5_CQE_RESIZE_CQ, false));
  q = QueryCq(cqn);
  EXPECT_EQ(q.get(QCqc::log_cq_size), 0u);
  EXPECT_EQ(q.get(QCqc::producer_counter), 2u);
  EXPECT_EQ(q.get(prm::query_cq_out::pas[0]), kTinyRing);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
  ASSERT_TRUE(Ok(DestroyCq(cqn)));
}

class NoResizeCqTest : public CqTest {
 protected:
  DeviceConfig Config() const override {
    DeviceConfig c;
    c.cq_resize = false;
    return c;
  }
};

TEST_F(NoResizeCqTest, ResizeIsRefusedWithoutTheCapability) {
  const uint32_t cqn = NewCq(eqn_);
  auto in = prm::CommandIn<prm::modify_cq_in>(prm::MODIFY_CQ, prm::CQ_OPMOD_RESIZE, 8);
  in.set(prm::modify_cq_in::cqn, cqn)
      .set(prm::modify_cq_in::modify_field_select_resize_field_select, kAllResizeFields)
      .set(MCqc::log_cq_size, 6)
      .set(prm::modify_cq_in::pas[0], kQueueIova + 4 * 4096);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::CQ_RESIZE_UNSUPPORTED));
  EXPECT_EQ(QueryCq(cqn).get(QCqc::log_cq_size), 7u);
  ASSERT_TRUE(Ok(DestroyCq(cqn)));
}

TEST_F(CqTest, TeardownRefusesLiveCqsAndForceFreesThem) {
  const uint32_t cqn = NewCq(eqn_);
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16),
                      CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  EXPECT_TRUE(Ok(QueryCq(cqn)));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  ASSERT_TRUE(Ok(Exec(force, 16)));
  const auto c = sim_->counters();
  EXPECT_EQ(c.cqs, 0u);
  EXPECT_EQ(c.eqs, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::sim::testing
