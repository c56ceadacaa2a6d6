// DMA handles on the software ConnectX: every result of ibv_alloc_dmah's checks in the order
// rdma-core and the kernel apply them (rdma-core libibverbs/verbs.c ibv_alloc_dmah; the kernel's
// drivers/infiniband/core/uverbs_std_types_dmah.c and drivers/infiniband/hw/mlx5/dmah.c),
// the steering-tag entries a handle with a CPU takes (index 0 never, one refcounted entry per
// (cpu, memory type), the tag programmed into the device's ST table and cleared on last release,
// ENOSPC when the table is full), devices without TPH, and nothing left behind.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "driver/bus/sim/sim_bus.h"
#include "driver/cmd/run.h"
#include "driver/context.h"
#include "tests/device/fixture.h"
#include "driver/dmah.h"
#include "driver/mr.h"
#include "driver/pd.h"
#include "driver/steering_tags.h"
#include "tools/sim/device.h"
#include "uapi/prm/mkey.h"

namespace onchip {
namespace {

using driver::Dmah;
using driver::SteeringTagTable;

constexpr uint32_t kCpu = IBV_DMAH_INIT_ATTR_MASK_CPU_ID;
constexpr uint32_t kPh = IBV_DMAH_INIT_ATTR_MASK_PH;
constexpr uint32_t kType = IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;

uint32_t ConfiguredCpus() { return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)); }

bool InAffinity(uint32_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_ISSET(cpu, &set);
}

// Restricts the calling thread to one CPU for its lifetime, then restores its mask.
class PinnedTo {
 public:
  explicit PinnedTo(int cpu) {
    CPU_ZERO(&saved_);
    ok_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = ok_ && sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~PinnedTo() { sched_setaffinity(0, sizeof saved_, &saved_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

ibv_dmah_init_attr Attr(uint32_t mask, uint8_t ph = 0, uint32_t cpu = 0, uint8_t type = 0) {
  return ibv_dmah_init_attr{.comp_mask = mask, .cpu_id = cpu, .ph = ph, .tph_mem_type = type};
}

class DmahTest : public testing::DriverTest {
 protected:
  // Every test frees its handles: no ST entry is left programmed, before or after Close.
  void TearDown() override {
    if (ctx_) {
      EXPECT_EQ(tags().entries_in_use(), 0u);
    }
    DriverTest::TearDown();
    for (uint16_t i = 0; i < sim_->config().pcie_tph_steering_tags && sim_->config().mkey_pcie_tph;
         ++i)
      EXPECT_EQ(sim_->SteeringTag(i), uint16_t{0}) << "entry " << i;
  }

  Result<Dmah*> Alloc(const ibv_dmah_init_attr& attr) {
    return driver::AllocDmah(ctx_->shared_device(), attr);
  }
  int AllocErrno(const ibv_dmah_init_attr& attr) {
    auto d = Alloc(attr);
    if (d) {
      EXPECT_TRUE(driver::DeallocDmah(*d));
      return 0;
    }
    return d.error().errno_value();
  }
  Dmah* MustAlloc(const ibv_dmah_init_attr& attr) {
    auto d = Alloc(attr);
    EXPECT_TRUE(d) << d.error().describe();
    return d ? *d : nullptr;
  }
  void Free(Dmah* d) {
    auto r = driver::DeallocDmah(d);
    EXPECT_TRUE(r) << r.error().describe();
  }

  SteeringTagTable& tags() { return ctx_->device().steering_tags(); }

  // The Vector Control dword of ST entry `index`, as the device's BAR holds it (little-endian).
  uint32_t* VectorControl(uint16_t index) {
    const auto tph = sim_->tph();
    EXPECT_TRUE(tph.has_value());
    auto p = ctx_->device().bus().Bar0Window(tph->st_table_offset + index * vpci::kMsixEntryBytes +
                                                  vpci::kMsixVectorControlOffset,
                                              4);
    EXPECT_TRUE(p);
    return reinterpret_cast<uint32_t*>(*p);
  }

};

// ---- the checks, in order: each case also breaks every later rule, so only the order makes
// the expected errno come out ----

TEST_F(DmahTest, UnknownMaskBitIsEopnotsuppBeforeAnythingElse) {
  EXPECT_EQ(AllocErrno(Attr(1u << 3)), EOPNOTSUPP);  // and PH missing
  EXPECT_EQ(AllocErrno(Attr(kCpu | kPh | kType | (1u << 31), 9, UINT32_MAX, 9)), EOPNOTSUPP);
}

TEST_F(DmahTest, MissingPhIsEinval) {
  EXPECT_EQ(AllocErrno(Attr(0)), EINVAL);
  EXPECT_EQ(AllocErrno(Attr(kCpu | kType, 9, UINT32_MAX, 9)), EINVAL);
}

TEST_F(DmahTest, CpuWithoutMemTypeOrTheReverseIsEinval) {
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu, 0, 0)), EINVAL);
  EXPECT_EQ(AllocErrno(Attr(kPh | kType, 0, 0, IBV_TPH_MEM_TYPE_VM)), EINVAL);
  // Before the ph range: a bad ph does not change the answer, nor does a bad CPU or type.
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu, 4, UINT32_MAX)), EINVAL);
  EXPECT_EQ(AllocErrno(Attr(kPh | kType, 4, 0, 9)), EINVAL);
}

TEST_F(DmahTest, PhAboveThreeIsEinval) {
  for (uint8_t ph = 0; ph <= 3; ++ph) EXPECT_EQ(AllocErrno(Attr(kPh, ph)), 0) << int{ph};
  EXPECT_EQ(AllocErrno(Attr(kPh, 4)), EINVAL);
  EXPECT_EQ(AllocErrno(Attr(kPh, 0xff)), EINVAL);
  // Before the CPU checks: a CPU outside the affinity would be EPERM, an unknown type EOPNOTSUPP.
  if (ConfiguredCpus() >= 2) {
    PinnedTo pin(0);
    ASSERT_TRUE(pin.ok());
    EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 4, 1, 9)), EINVAL);
  }
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 4, 0, 9)), EINVAL);
}

TEST_F(DmahTest, CpuNotOnThisMachineIsEinval) {
  const uint32_t n = ConfiguredCpus();
  ASSERT_GT(n, 0u);
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, n, IBV_TPH_MEM_TYPE_VM)), EINVAL);
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, UINT32_MAX, IBV_TPH_MEM_TYPE_VM)), EINVAL);
  // Before the memory type (EOPNOTSUPP).
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, n, 9)), EINVAL);
}

TEST_F(DmahTest, CpuOutsideTheCallersAffinityIsEperm) {
  if (ConfiguredCpus() < 2) GTEST_SKIP() << "needs two CPUs";
  {
    PinnedTo pin(0);
    ASSERT_TRUE(pin.ok());
    EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 1, 1, IBV_TPH_MEM_TYPE_VM)), EPERM);
    // Before the memory type.
    EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 1, 1, 2)), EPERM);
    // The CPU the thread may run on is fine.
    EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 1, 0, IBV_TPH_MEM_TYPE_VM)), 0);
  }
  // The affinity is the caller's, checked at each call: unpinned, CPU 1 is allowed again.
  ASSERT_TRUE(InAffinity(1));
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 1, 1, IBV_TPH_MEM_TYPE_VM)), 0);
}

TEST_F(DmahTest, MemTypeOtherThanVmOrPmIsEopnotsupp) {
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, 0, 2)), EOPNOTSUPP);
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, 0, 0xff)), EOPNOTSUPP);
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_PM)), 0);
}

TEST_F(DmahTest, DeviceWithoutMkeyTphIsEopnotsupp) {
  sim::DeviceConfig config;
  config.mkey_pcie_tph = false;
  Open(config);
  EXPECT_FALSE(tags().mkey_pcie_tph());
  EXPECT_EQ(AllocErrno(Attr(kPh, 1)), EOPNOTSUPP);
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 1, 0, IBV_TPH_MEM_TYPE_VM)), EOPNOTSUPP);
  // Input errors still come first.
  EXPECT_EQ(AllocErrno(Attr(kPh, 4)), EINVAL);
}

TEST_F(DmahTest, TphWithoutAnStTableRefusesOnlyACpu) {
  for (uint16_t entries : {0, 1}) {  // one entry is entry 0 only: nothing to hand out
    SCOPED_TRACE(entries);
    sim::DeviceConfig config;
    config.pcie_tph_steering_tags = entries;
    Open(config);
    EXPECT_TRUE(tags().mkey_pcie_tph());
    Dmah* ph_only = MustAlloc(Attr(kPh, 2));
    ASSERT_NE(ph_only, nullptr);
    EXPECT_EQ(ph_only->st_index, 0u);
    Free(ph_only);
    EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 2, 0, IBV_TPH_MEM_TYPE_VM)), EOPNOTSUPP);
  }
}

// ---- what a handle is ----

TEST_F(DmahTest, HandleWithoutCpuHasNoSteeringTag) {
  Dmah* d = MustAlloc(Attr(kPh, 3));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->ibv.context, ctx_->verbs());
  EXPECT_EQ(Dmah::From(&d->ibv), d);
  EXPECT_EQ(d->ph, 3u);
  EXPECT_FALSE(d->has_cpu);
  EXPECT_EQ(d->st_index, 0u);
  EXPECT_EQ(tags().entries_in_use(), 0u);
  Dmah* e = MustAlloc(Attr(kPh, 0));
  ASSERT_NE(e, nullptr);
  EXPECT_NE(d->handle, e->handle);
  Free(e);
  Free(d);
}

TEST_F(DmahTest, CpuHandleProgramsTheTagForItsCpuAndMemType) {
  const uint32_t cpu = ConfiguredCpus() >= 2 ? 1 : 0;
  Dmah* vm = MustAlloc(Attr(kPh | kCpu | kType, 1, cpu, IBV_TPH_MEM_TYPE_VM));
  Dmah* pm = MustAlloc(Attr(kPh | kCpu | kType, 1, cpu, IBV_TPH_MEM_TYPE_PM));
  ASSERT_TRUE(vm && pm);
  EXPECT_NE(vm->st_index, 0u);
  EXPECT_NE(pm->st_index, 0u);
  EXPECT_NE(vm->st_index, pm->st_index);
  // The documented platform rule, as the device reads the entries.
  EXPECT_EQ(SteeringTagTable::TagFor(cpu, IBV_TPH_MEM_TYPE_VM), cpu);
  EXPECT_EQ(SteeringTagTable::TagFor(cpu, IBV_TPH_MEM_TYPE_PM), 0x8000 | cpu);
  EXPECT_EQ(sim_->SteeringTag(vm->st_index), uint16_t(cpu));
  EXPECT_EQ(sim_->SteeringTag(pm->st_index), uint16_t(0x8000 | cpu));
  EXPECT_EQ(sim_->SteeringTag(0), uint16_t{0});  // entry 0 is never written
  Free(vm);
  Free(pm);
}

TEST_F(DmahTest, SamePairSharesOneEntryUntilTheLastRelease) {
  Dmah* a = MustAlloc(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_PM));
  Dmah* b = MustAlloc(Attr(kPh | kCpu | kType, 2, 0, IBV_TPH_MEM_TYPE_PM));  // ph is not the key
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->st_index, b->st_index);
  EXPECT_EQ(tags().entries_in_use(), 1u);
  const uint8_t index = a->st_index;
  Free(a);
  EXPECT_EQ(sim_->SteeringTag(index), uint16_t{0x8000});  // b still uses it
  EXPECT_EQ(tags().entries_in_use(), 1u);
  Free(b);
  EXPECT_EQ(sim_->SteeringTag(index), uint16_t{0});  // cleared
  EXPECT_EQ(tags().entries_in_use(), 0u);
}

TEST_F(DmahTest, ProgrammingKeepsTheOtherVectorControlBits) {
  // Mask the MSI-X vector (bit 0) and set a reserved bit of every entry the table may pick.
  for (uint16_t i = 1; i < 4; ++i) *VectorControl(i) = 0x00000001u | 0x00008000u;
  Dmah* d = MustAlloc(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_PM));
  ASSERT_NE(d, nullptr);
  const uint8_t index = d->st_index;
  ASSERT_LT(index, 4u);
  EXPECT_EQ(*VectorControl(index), 0x80008001u);
  Free(d);
  EXPECT_EQ(*VectorControl(index), 0x00008001u);
  for (uint16_t i = 1; i < 4; ++i) *VectorControl(i) = 0;
}

TEST_F(DmahTest, FullTableIsEnospcAndAReleasedEntryIsReused) {
  if (ConfiguredCpus() < 2 || !InAffinity(0) || !InAffinity(1)) GTEST_SKIP() << "needs CPUs 0, 1";
  sim::DeviceConfig config;
  config.pcie_tph_steering_tags = 4;  // entries 1..3
  Open(config);
  Dmah* a = MustAlloc(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_VM));
  Dmah* b = MustAlloc(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_PM));
  Dmah* c = MustAlloc(Attr(kPh | kCpu | kType, 0, 1, IBV_TPH_MEM_TYPE_VM));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ((std::set<uint8_t>{a->st_index, b->st_index, c->st_index}),
            (std::set<uint8_t>{1, 2, 3}));
  EXPECT_EQ(AllocErrno(Attr(kPh | kCpu | kType, 0, 1, IBV_TPH_MEM_TYPE_PM)), ENOSPC);
  // A pair that already has an entry still fits, and so does a handle without a CPU.
  Dmah* shared = MustAlloc(Attr(kPh | kCpu | kType, 0, 1, IBV_TPH_MEM_TYPE_VM));
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->st_index, c->st_index);
  EXPECT_EQ(AllocErrno(Attr(kPh)), 0);
  // Freeing one makes room for the refused pair, in the entry just released.
  const uint8_t freed = b->st_index;
  Free(b);
  Dmah* d = MustAlloc(Attr(kPh | kCpu | kType, 0, 1, IBV_TPH_MEM_TYPE_PM));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->st_index, freed);
  EXPECT_EQ(sim_->SteeringTag(freed), uint16_t{0x8001});
  for (Dmah* x : {a, c, shared, d}) Free(x);
}

// ---- memory regions registered with a handle ----

TEST_F(DmahTest, MrCarriesTheHandlesTphFieldsAndPinsIt) {
  auto pd = driver::AllocPd(ctx_->shared_device());
  ASSERT_TRUE(pd) << pd.error().describe();
  Dmah* with_tag = MustAlloc(Attr(kPh | kCpu | kType, 2, 0, IBV_TPH_MEM_TYPE_PM));
  Dmah* hint_only = MustAlloc(Attr(kPh, 1));
  ASSERT_TRUE(with_tag && hint_only);
  alignas(4096) static std::byte buf[2][4096];
  auto mr = driver::RegMr(*pd, buf[0], sizeof buf[0], reinterpret_cast<uint64_t>(buf[0]),
                          IBV_ACCESS_LOCAL_WRITE, with_tag);
  ASSERT_TRUE(mr) << mr.error().describe();
  auto mr2 = driver::RegMr(*pd, buf[1], sizeof buf[1], reinterpret_cast<uint64_t>(buf[1]),
                           IBV_ACCESS_LOCAL_WRITE, hint_only);
  ASSERT_TRUE(mr2) << mr2.error().describe();

  // What the device holds for each mkey (QUERY_MKEY).
  constexpr auto kMkc = prm::query_mkey_out::memory_key_mkey_entry;
  auto query = [&](uint32_t mkey) {
    prm::Message<prm::query_mkey_in> in;
    in.set(prm::query_mkey_in::opcode, prm::QUERY_MKEY)
        .set(prm::query_mkey_in::mkey_index, mkey >> 8);
    auto out = driver::cmd::Run<prm::query_mkey_out>(ctx_->device().commander(), in);
    EXPECT_TRUE(out) << out.error().describe();
    return out ? std::move(*out) : prm::Message<prm::query_mkey_out>();
  };
  auto q = query((*mr)->ibv.lkey);
  EXPECT_EQ(q.get(kMkc.pcie_tph_en), 1u);
  EXPECT_EQ(q.get(kMkc.pcie_tph_ph), 2u);
  EXPECT_EQ(q.get(kMkc.pcie_tph_steering_tag_index), with_tag->st_index);
  EXPECT_NE(with_tag->st_index, 0u);
  auto q2 = query((*mr2)->ibv.lkey);
  EXPECT_EQ(q2.get(kMkc.pcie_tph_en), 1u);
  EXPECT_EQ(q2.get(kMkc.pcie_tph_ph), 1u);
  EXPECT_EQ(q2.get(kMkc.pcie_tph_steering_tag_index), 0u);

  // EBUSY while an MR uses it; the handle and its tag stay.
  for (Dmah* d : {with_tag, hint_only}) {
    auto busy = driver::DeallocDmah(d);
    ASSERT_FALSE(busy);
    EXPECT_EQ(busy.error().errno_value(), EBUSY);
  }
  EXPECT_EQ(sim_->SteeringTag(with_tag->st_index), uint16_t{0x8000});
  EXPECT_TRUE(driver::DeregMr(*mr));
  EXPECT_TRUE(driver::DeregMr(*mr2));
  Free(with_tag);
  Free(hint_only);
  EXPECT_TRUE(driver::DeallocPd(*pd));
}

// ---- lifetime ----

TEST_F(DmahTest, CloseReleasesLiveHandlesAndTheyFreeAfterwards) {
  Dmah* d = MustAlloc(Attr(kPh | kCpu | kType, 0, 0, IBV_TPH_MEM_TYPE_PM));
  ASSERT_NE(d, nullptr);
  const uint8_t index = d->st_index;
  ASSERT_EQ(sim_->SteeringTag(index), uint16_t{0x8000});
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kDmah), 1u);
  EXPECT_EQ(sim_->SteeringTag(index), uint16_t{0});
  // A closed device makes no new handles; the old one frees without touching the device.
  EXPECT_EQ(AllocErrno(Attr(kPh)), EIO);
  Free(d);
  ctx_.reset();
}

TEST_F(DmahTest, DeallocNullIsEinval) {
  auto r = driver::DeallocDmah(nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EINVAL);
}

// 8 threads allocating and freeing handles over shared and distinct (cpu, type) pairs: every
// entry is back to free and cleared, and the shared entries never changed index under a holder.
TEST_F(DmahTest, ConcurrentAllocAndFreeLeaveTheTableEmpty) {
  const uint32_t cpus = std::min<uint32_t>(ConfiguredCpus(), 2);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint32_t cpu = static_cast<uint32_t>(i + t) % cpus;
        const uint8_t type = static_cast<uint8_t>((i / 2 + t) % 2);
        auto d = Alloc(Attr(kPh | kCpu | kType, 0, cpu, type));
        if (!d) {
          ++failures;
          continue;
        }
        if (sim_->SteeringTag((*d)->st_index) != SteeringTagTable::TagFor(cpu, type)) ++failures;
        if (!driver::DeallocDmah(*d)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(tags().entries_in_use(), 0u);
}

// ---- the table over a bus, without a Context ----

TEST(SteeringTagTableTest, IndicesStopAt255WhateverTheTableSize) {
  sim::DeviceConfig config;
  config.pcie_tph_steering_tags = 300;
  auto sim = sim::Device::Create(config);
  ASSERT_TRUE(sim) << sim.error().describe();
  auto bus = driver::bus::SimBus::Open(**sim);
  ASSERT_TRUE(bus) << bus.error().describe();
  SteeringTagTable table(**bus, (*bus)->tph(), true);
  std::vector<uint8_t> got;
  for (uint32_t cpu = 0; cpu < 255; ++cpu) {
    auto index = table.Acquire(cpu, IBV_TPH_MEM_TYPE_PM);
    ASSERT_TRUE(index) << cpu << ": " << index.error().describe();
    EXPECT_NE(*index, 0u);
    EXPECT_EQ((*sim)->SteeringTag(*index), SteeringTagTable::TagFor(cpu, IBV_TPH_MEM_TYPE_PM));
    got.push_back(*index);
  }
  EXPECT_EQ(std::set<uint8_t>(got.begin(), got.end()).size(), 255u);
  auto full = table.Acquire(255, IBV_TPH_MEM_TYPE_PM);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().errno_value(), ENOSPC);
  for (uint8_t index : got) table.Release(index);
  EXPECT_EQ(table.entries_in_use(), 0u);
  for (uint16_t i = 0; i < 300; ++i) EXPECT_EQ((*sim)->SteeringTag(i), uint16_t{0}) << i;
}

TEST(SteeringTagTableTest, ReleaseOfAnIndexNotHeldChangesNothing) {
  auto sim = sim::Device::Create({});
  ASSERT_TRUE(sim);
  auto bus = driver::bus::SimBus::Open(**sim);
  ASSERT_TRUE(bus);
  SteeringTagTable table(**bus, (*bus)->tph(), true);
  auto index = table.Acquire(0, IBV_TPH_MEM_TYPE_PM);
  ASSERT_TRUE(index);
  table.Release(0);
  table.Release(static_cast<uint8_t>(*index + 1));
  table.Release(255);
  EXPECT_EQ(table.entries_in_use(), 1u);
  EXPECT_EQ((*sim)->SteeringTag(*index), uint16_t{0x8000});
  table.Release(*index);
  table.Release(*index);  // a second release of a freed entry is ignored
  EXPECT_EQ(table.entries_in_use(), 0u);
}

TEST(SteeringTagTableTest, NoMkeyTphOrNoTableIsEopnotsupp) {
  auto sim = sim::Device::Create({});
  ASSERT_TRUE(sim);
  auto bus = driver::bus::SimBus::Open(**sim);
  ASSERT_TRUE(bus);
  for (auto [table, mkey_tph] : {std::pair{(*bus)->tph(), false},
                                 std::pair{std::optional<vpci::TphCapability>(), true}}) {
    SteeringTagTable t(**bus, table, mkey_tph);
    auto index = t.Acquire(0, IBV_TPH_MEM_TYPE_VM);
    ASSERT_FALSE(index);
    EXPECT_EQ(index.error().errno_value(), EOPNOTSUPP);
  }
}

}  // namespace
}  // namespace onchip
