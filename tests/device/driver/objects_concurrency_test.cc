// Eight threads allocating and freeing PDs, parent and thread domains, MRs, windows, DMA handles
// and queue buffers at once, some on one shared PD: every call succeeds or answers EBUSY as
// documented, and the device ends holding nothing. Run under TSan too (tools/onchip test
// --sanitize runs this target with --config=tsan).
#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "driver/queue_buffer.h"
#include "tests/device/fixture.h"

namespace onchip::testing {
namespace {

class ObjectsConcurrencyTest : public DriverTest {};

TEST_F(ObjectsConcurrencyTest, EightThreadsAllocateAndFreeEverything) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 25;
  ibv_pd* shared = v::alloc_pd(verbs_);
  ASSERT_NE(shared, nullptr);
  std::atomic<int> failures{0};
  auto fail = [&](const char* what, int err) {
    ADD_FAILURE() << what << ": " << strerror(err);
    failures.fetch_add(1);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<char> buf(3 * 4096);
      for (int round = 0; round < kRounds && failures.load() == 0; ++round) {
        ibv_pd* pd = v::alloc_pd(verbs_);
        if (!pd) return fail("alloc_pd", errno);
        ibv_td_init_attr tattr{.comp_mask = 0};
        ibv_td* td = v::alloc_td(verbs_, &tattr);
        if (!td) return fail("alloc_td", errno);
        ibv_parent_domain_init_attr pattr{};
        pattr.pd = pd;
        pattr.td = td;
        ibv_pd* pad = v::alloc_parent_domain(verbs_, &pattr);
        if (!pad) return fail("alloc_parent_domain", errno);
        ibv_dmah_init_attr dattr{};
        dattr.comp_mask = IBV_DMAH_INIT_ATTR_MASK_PH;
        dattr.ph = static_cast<uint8_t>(t & 3);
        ibv_dmah* dmah = v::alloc_dmah(verbs_, &dattr);
        if (!dmah) return fail("alloc_dmah", errno);
        ibv_mr_init_attr mattr{};
        mattr.length = buf.size();
        mattr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
        mattr.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH;
        mattr.addr = buf.data();
        mattr.dmah = dmah;
        // One MR on the thread's parent domain, one on the shared PD.
        ibv_mr* mr = v::reg_mr_ex(pad, &mattr);
        ibv_mr* shared_mr = v::reg_mr(shared, buf.data(), buf.size(),
                                      reinterpret_cast<uintptr_t>(buf.data()), 0);
        if (!mr || !shared_mr) return fail("reg_mr", errno);
        ibv_mw* mw = v::alloc_mw(round % 2 ? shared : pd, round % 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
        if (!mw) return fail("alloc_mw", errno);
        {
          auto qp = driver::QueueBuffer::Allocate(driver::Pd::From(pad), 4096, 4096,
                                                  MLX5DV_RES_TYPE_QP);
          if (!qp) return fail("queue buffer", qp.error().errno_value());
          // Freed in the wrong order: each answers EBUSY and stays usable.
          if (v::dealloc_pd(pad) != EBUSY) return fail("dealloc_pd(pad) with a queue", 0);
        }
        if (v::dealloc_td(td) != EBUSY) return fail("dealloc_td held", 0);
        if (v::dealloc_dmah(dmah) != EBUSY) return fail("dealloc_dmah used", 0);
        if (v::dealloc_pd(shared) != EBUSY) return fail("dealloc_pd(shared) with children", 0);
        if (int e = v::dealloc_mw(mw)) return fail("dealloc_mw", e);
        if (int e = v::dereg_mr(shared_mr)) return fail("dereg_mr shared", e);
        if (int e = v::dereg_mr(mr)) return fail("dereg_mr", e);
        if (int e = v::dealloc_dmah(dmah)) return fail("dealloc_dmah", e);
        if (int e = v::dealloc_pd(pad)) return fail("dealloc_pd(pad)", e);
        if (int e = v::dealloc_td(td)) return fail("dealloc_td", e);
        if (int e = v::dealloc_pd(pd)) return fail("dealloc_pd", e);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(v::dealloc_pd(shared), 0);
  const auto c = sim_->counters();
  EXPECT_EQ(c.mkeys, 0u);
  EXPECT_EQ(c.pds, 0u);
  EXPECT_EQ(c.uars, 1u);  // the shared UAR the completion EQ sits on
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

// No device-wide lock: eight threads registering and deregistering MRs keep several commands in
// the command queue at once (the software ConnectX counts the most entries it found handed over
// at one look). A driver that serialised object creation would never show more than one.
TEST_F(ObjectsConcurrencyTest, MrCommandsFromEightThreadsAreInFlightTogether) {
  constexpr int kThreads = 8;
  constexpr int kMaxRounds = 400;
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  std::atomic<bool> overlapped{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<char> buf(2 * 4096);
      for (int round = 0; round < kMaxRounds && !overlapped.load() && failures.load() == 0;
           ++round) {
        ibv_mr* mr = v::reg_mr(pd, buf.data(), buf.size(),
                               reinterpret_cast<uintptr_t>(buf.data()), IBV_ACCESS_LOCAL_WRITE);
        if (mr == nullptr || v::dereg_mr(mr) != 0) {
          failures.fetch_add(1);
          return;
        }
        if (sim_->queue_counters().max_in_flight > 1) overlapped.store(true);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(sim_->queue_counters().max_in_flight, 1u)
      << "every command ran alone: object creation is serialised somewhere";
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  EXPECT_EQ(sim_->counters().mkeys, 0u);
  EXPECT_EQ(sim_->firmware().CheckInvariants(), nullptr);
}

}  // namespace
}  // namespace onchip::testing
