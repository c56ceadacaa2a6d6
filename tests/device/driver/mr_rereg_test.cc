// Re-registration of host MRs (ibv_rereg_mr's provider half) on the software ConnectX: each
// flag and their combination, the refusals in the kernel's order, device failures that leave the
// MR as it was, and the old key gone from the device afterwards (QUERY_MKEY refuses it).
#include <cerrno>
#include <cstring>
#include <vector>

#include "driver/mr.h"
#include "driver/mw.h"
#include "driver/mw_bind.h"
#include "tests/device/fixture.h"
#include "tools/sim/umr.h"

namespace onchip::testing {
namespace {

constexpr uint32_t kQpn = 0x42;  // the QP a bind WQE names

class MrReregTest : public DriverMrTest {
 protected:
  // Whether the device still knows the key (QUERY_MKEY of its index).
  bool KeyExists(uint32_t mkey) {
    prm::Message<prm::query_mkey_in> in;
    in.set(prm::query_mkey_in::opcode, prm::QUERY_MKEY)
        .set(prm::query_mkey_in::mkey_index, mkey >> 8);
    return driver::cmd::Run<prm::query_mkey_out>(device().commander(), in).has_value();
  }
  uint32_t PdnOf(ibv_pd* pd) { return driver::Pd::From(pd)->pdn; }
};

TEST_F(MrReregTest, ChangeAccessKeepsTheKeysAndChangesTheRights) {
  ibv_mr* mr = Reg(0, 8192, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  const uint32_t old_key = mr->lkey;
  const uint32_t handle = mr->handle;
  const size_t mappings = sim_->dma_mappings();
  const uint32_t mkeys = sim_->counters().mkeys;

  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, access), 0);
  EXPECT_EQ(mr->lkey, old_key);  // changed in place by the device's registration queue
  EXPECT_EQ(mr->rkey, old_key);
  EXPECT_EQ(mr->handle, handle);
  EXPECT_EQ(driver::Mr::From(mr)->access, access);
  EXPECT_EQ(mr->addr, buf_);
  EXPECT_EQ(mr->length, 8192u);
  EXPECT_EQ(mr->pd, pd_);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.rw), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.rr), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.lw), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(buf_));
  EXPECT_EQ(q.get(kQueriedMkc.len), 8192u);
  EXPECT_EQ(q.get(kQueriedMkc.pd), PdnOf(pd_));
  EXPECT_EQ(sim_->counters().mkeys, mkeys);        // one key for one MR
  EXPECT_EQ(sim_->dma_mappings(), mappings);       // the pages stay mapped once

  // Back to local only: the remote rights go with the next key.
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE),
            0);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.rw), 0u);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.rr), 0u);
  EXPECT_EQ(mr->lkey, old_key);
  // A zero-based switch moves the key's start address: that one makes a new key.
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED),
            0);
  EXPECT_NE(mr->lkey, old_key);
  EXPECT_FALSE(KeyExists(old_key));
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.umr_en), 1u);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, ChangePdKeepsTheKeysAndMovesThePin) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_pd* other = v::alloc_pd(verbs_);
  ASSERT_TRUE(mr && other);
  const uint32_t old_key = mr->lkey;
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, other, nullptr, 0, 0), 0);
  EXPECT_EQ(mr->pd, other);
  EXPECT_EQ(mr->lkey, old_key);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.pd), PdnOf(other));
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.lw), 1u);  // access unchanged
  EXPECT_EQ(driver::Pd::From(pd_)->life.pins(), 0u);
  EXPECT_EQ(driver::Pd::From(other)->life.pins(), 1u);
  EXPECT_EQ(v::dealloc_pd(other), EBUSY);  // the MR now pins it
  // And back: the first PD holds it again and the second can go once the MR has left it.
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd_, nullptr, 0, 0), 0);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.pd), PdnOf(pd_));
  EXPECT_EQ(v::dealloc_pd(other), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), EBUSY);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, ChangeTranslationMapsTheNewPagesAndDropsTheOld) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr);
  const uint32_t old_key = mr->lkey;
  const size_t mappings = sim_->dma_mappings();
  char* addr = buf_ + 16384 + 100;
  const size_t length = 3 * 4096;
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, addr, length, 0), 0);
  EXPECT_EQ(mr->addr, addr);
  EXPECT_EQ(mr->length, length);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(addr));
  EXPECT_EQ(q.get(kQueriedMkc.len), length);
  EXPECT_EQ(q.get(kQueriedMkc.rr), 1u);  // access unchanged
  EXPECT_EQ(q.get(kQueriedMkc.pd), PdnOf(pd_));
  EXPECT_FALSE(KeyExists(old_key));
  EXPECT_EQ(sim_->dma_mappings(), mappings);  // the new range's mapping replaced the old one
  EXPECT_EQ(driver::Mr::From(mr)->mapping.length(), 4u * 4096);  // 4 pages under it now
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, AllThreeAtOnce) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_pd* other = v::alloc_pd(verbs_);
  ASSERT_TRUE(mr && other);
  const uint32_t old_key = mr->lkey;
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  ASSERT_EQ(v::rereg_mr(mr,
                        IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                            IBV_REREG_MR_CHANGE_ACCESS,
                        other, buf_ + 8192, 8192, access),
            0);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(buf_ + 8192));
  EXPECT_EQ(q.get(kQueriedMkc.len), 8192u);
  EXPECT_EQ(q.get(kQueriedMkc.pd), PdnOf(other));
  EXPECT_EQ(q.get(kQueriedMkc.a), 1u);
  EXPECT_EQ(mr->pd, other);
  EXPECT_EQ(mr->addr, buf_ + 8192);
  EXPECT_FALSE(KeyExists(old_key));
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_pd(other), 0);
}

TEST_F(MrReregTest, RefusalsReachNoDeviceAndChangeNothing) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  const uint32_t key = mr->lkey;
  const auto commands = sim_->counters().commands;
  struct Case {
    int flags;
    ibv_pd* pd;
    void* addr;
    size_t length;
    int access;
    int err;
  } cases[] = {
      {0, nullptr, nullptr, 0, 0, EINVAL},                                 // nothing to change
      {IBV_REREG_MR_CHANGE_ACCESS << 1, nullptr, nullptr, 0, 0, EINVAL},  // unknown flag
      {IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_REMOTE_WRITE, EINVAL},
      {IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, 1 << 12, EINVAL},
      {IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, EOPNOTSUPP},
      {IBV_REREG_MR_CHANGE_PD, nullptr, nullptr, 0, 0, EINVAL},           // no PD
      {IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf_, 0, 0, EINVAL},     // empty range
      {IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf_ + 4096, ~size_t{0}, 0, EINVAL},  // wraps
  };
  for (const Case& c : cases) {
    errno = 0;
    EXPECT_EQ(v::rereg_mr(mr, c.flags, c.pd, c.addr, c.length, c.access), c.err) << c.flags;
    EXPECT_EQ(errno, c.err) << c.flags;
    EXPECT_EQ(mr->lkey, key);
  }
  errno = 0;
  EXPECT_EQ(v::rereg_mr(nullptr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, 0), EINVAL);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(sim_->counters().commands, commands);  // refused before the device
  EXPECT_TRUE(KeyExists(key));
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, PdOfAnotherDeviceIsRefused) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  auto other_sim = MakeDevice();
  auto other_ctx = Context::Open(driver::Locator::Of(*other_sim));
  ASSERT_TRUE(other_ctx) << other_ctx.error().describe();
  ibv_pd* foreign = v::alloc_pd(other_ctx->verbs());
  ASSERT_NE(foreign, nullptr);
  errno = 0;
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, foreign, nullptr, 0, 0), EINVAL);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(v::dealloc_pd(foreign), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, DeviceMemoryMrIsRefused) {
  ibv_alloc_dm_attr attr{.length = 4096, .log_align_req = 0, .comp_mask = 0};
  ibv_dm* dm = v::alloc_dm(verbs_, &attr);
  ASSERT_NE(dm, nullptr) << strerror(errno);
  ibv_mr* mr = v::reg_dm_mr(pd_, dm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  const uint32_t key = mr->lkey;
  const auto commands = sim_->counters().commands;
  errno = 0;
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_ZERO_BASED),
            EINVAL);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(mr->lkey, key);
  EXPECT_EQ(sim_->counters().commands, commands);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::free_dm(dm), 0);
}

TEST_F(MrReregTest, FailedCreateLeavesTheMrAsItWas) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_pd* other = v::alloc_pd(verbs_);
  ASSERT_TRUE(mr && other);
  const uint32_t key = mr->lkey;
  const size_t mappings = sim_->dma_mappings();
  sim_->InjectFailure({.count = 1, .opcode = prm::CREATE_MKEY,
                       .status = prm::CommandStatus::INT_ERR, .syndrome = 0x1234});
  errno = 0;
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD, other,
                        buf_ + 8192, 4096, 0),
            EIO);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(mr->lkey, key);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(mr->addr, buf_);
  EXPECT_TRUE(KeyExists(key));
  EXPECT_EQ(QueryMkey(key).get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(buf_));
  EXPECT_EQ(sim_->dma_mappings(), mappings);  // the new range's mapping went again
  EXPECT_EQ(driver::Pd::From(other)->life.pins(), 0u);
  EXPECT_EQ(v::dealloc_pd(other), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

// The first in-place change brings up the device's REG_UMR queue (PD, CQ, QP and its three
// transitions). When the firmware fails any of those commands the rereg still happens, over a
// new key as it would without UMR, and the device keeps no part of the half-built queue; the
// next rereg builds the queue and changes the MR in place, keeping its key.
TEST_F(MrReregTest, AFailedUmrQueueBringUpFallsBackToANewKeyAndLeavesNothingBehind) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  bool remote_read = false;
  for (const uint16_t opcode : {prm::ALLOC_PD, prm::CREATE_CQ, prm::CREATE_QP, prm::RST2INIT_QP,
                                prm::INIT2RTR_QP, prm::RTR2RTS_QP}) {
    SCOPED_TRACE(::testing::Message() << "opcode 0x" << std::hex << opcode);
    const sim::Counters before = sim_->counters();
    const size_t mappings = sim_->dma_mappings();
    sim_->InjectFailure({.count = 1, .opcode = opcode, .status = prm::CommandStatus::INT_ERR,
                         .syndrome = 0x1234});
    remote_read = !remote_read;
    const int access = IBV_ACCESS_LOCAL_WRITE | (remote_read ? IBV_ACCESS_REMOTE_READ : 0);
    EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, access), 0);
    auto issued = [opcode](const sim::Counters& c) {
      auto it = c.by_opcode.find(opcode);
      return it == c.by_opcode.end() ? uint64_t{0} : it->second;
    };
    EXPECT_EQ(issued(sim_->counters()), issued(before) + 1) << "the injected failure was not reached";
    sim_->firmware().ClearInjectedFailures();
    const sim::Counters after = sim_->counters();
    EXPECT_EQ(after.pds, before.pds);
    EXPECT_EQ(after.cqs, before.cqs);
    EXPECT_EQ(after.qps, before.qps);
    EXPECT_EQ(after.mkeys, before.mkeys);  // the new key replaced the old one
    EXPECT_EQ(after.pages_held, before.pages_held);
    EXPECT_EQ(sim_->dma_mappings(), mappings);
    EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.rr), remote_read ? 1u : 0u);
  }
  const uint32_t key = mr->lkey;
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE | (remote_read ? 0 : IBV_ACCESS_REMOTE_READ)),
            0);
  EXPECT_EQ(mr->lkey, key) << "with the queue up, the change is made in place";
  EXPECT_EQ(QueryMkey(key).get(kQueriedMkc.rr), remote_read ? 0u : 1u);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, AWindowBoundToTheKeyBlocksOnlyANewTranslation) {
  ibv_mr* mr = Reg(0, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ibv_mw* mw = v::alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_TRUE(mr && mw);
  const auto base = reinterpret_cast<uint64_t>(buf_);
  auto post = [&](const ibv_mw_bind_info& info) {
    std::vector<std::byte> wqe(driver::kBindWqeBytes);
    const uint32_t rkey = driver::NextRkey(mw->rkey);
    auto n = driver::BuildBindWqe(*driver::Mw::From(mw), rkey, info, kQpn, wqe);
    EXPECT_TRUE(n) << n.error().describe();
    auto r = sim_->firmware().PostUmr(
        {.wqe = std::span(wqe).first(*n), .qpn = kQpn, .pd = PdnOf(pd_)});
    EXPECT_TRUE(r.ok()) << sim::UmrCheckName(r.check);
    mw->rkey = rkey;
  };
  post({.mr = mr, .addr = base, .length = 4096, .mw_access_flags = IBV_ACCESS_REMOTE_READ});
  const uint32_t key = mr->lkey;
  const uint32_t mkeys = sim_->counters().mkeys;
  errno = 0;
  // A new translation needs a new key, and the device keeps the old one while a window is bound.
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf_ + 8192, 4096, 0),
            EBUSY);
  EXPECT_EQ(errno, EBUSY);
  EXPECT_EQ(mr->lkey, key);
  EXPECT_EQ(mr->addr, buf_);
  EXPECT_EQ(sim_->counters().mkeys, mkeys);  // the spare key went again
  // New rights change in place: the key and the window on it stay.
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ),
            0);
  EXPECT_EQ(mr->lkey, key);
  EXPECT_EQ(QueryMkey(key).get(kQueriedMkc.rr), 1u);
  EXPECT_EQ(QueryMkey(mw->rkey).get(kQueriedMkc.free), 0u);
  // Unbound, the MR takes a new translation.
  post({.mr = mr, .addr = base, .length = 0, .mw_access_flags = 0});
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, buf_ + 8192, 4096, 0), 0);
  EXPECT_NE(mr->lkey, key);
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrReregTest, CloseReleasesAReregisteredMrAndTheRegistrationQueue) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_pd* other = v::alloc_pd(verbs_);
  ASSERT_TRUE(mr && other);
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_TRANSLATION, other,
                        buf_ + 4096, 4096, 0),
            0);
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
            0);
  EXPECT_EQ(sim_->counters().qps, 1u);  // the REG_UMR QP
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kMr), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kPd), 2u);
  EXPECT_EQ(sim_->counters().mkeys, 0u);
  EXPECT_EQ(sim_->counters().qps, 0u);
  EXPECT_EQ(sim_->counters().cqs, 0u);
  EXPECT_EQ(sim_->counters().pds, 0u);
  errno = 0;
  EXPECT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, 0), EIO);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_pd(other), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  pd_ = nullptr;
  ctx_.reset();
  EXPECT_EQ(sim_->dma_mappings(), 0u);
}

}  // namespace
}  // namespace onchip::testing
