// Memory regions over host memory, memory windows, and MRs with DMA handles on the software
// ConnectX, through rdma-core's calls: every documented result (rdma-core libibverbs/verbs.c
// ibv_reg_mr_iova2, ibv_reg_mr_ex; providers/mlx5/verbs.c mlx5_alloc_mw, mlx5_bind_mw), the mkeys read back with QUERY_MKEY, binds checked by the device's UMR
// logic, and nothing left on the device.
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "driver/dmah.h"
#include "driver/mr.h"
#include "driver/mw.h"
#include "driver/mw_bind.h"
#include "driver/steering_tags.h"
#include "tests/device/fixture.h"
#include "tools/sim/umr.h"

namespace onchip::testing {
namespace {

constexpr uint32_t kQpn = 0x42;  // the QP a future send queue would post binds on

class MrMwTest : public DriverMrTest {
 protected:
  uint32_t pdn() { return driver::Pd::From(pd_)->pdn; }
  // The device's UMR logic on a bind WQE the driver built.
  sim::UmrResult Bind(ibv_mw* mw, uint32_t new_rkey, const ibv_mw_bind_info& info) {
    std::vector<std::byte> wqe(driver::kBindWqeBytes);
    auto n = driver::BuildBindWqe(*driver::Mw::From(mw), new_rkey, info, kQpn, wqe);
    EXPECT_TRUE(n) << n.error().describe();
    return sim_->firmware().PostUmr({.wqe = std::span(wqe).first(*n), .qpn = kQpn, .pd = pdn()});
  }
};

// ---- host MRs ----

TEST_F(MrMwTest, HostMrIsAnMttMkeyOverOneMappingOfItsPages) {
  const size_t before = sim_->dma_mappings();
  // 3 pages plus a bit, starting 100 bytes into a page: 5 pages under it.
  ibv_mr* mr = Reg(100, 4 * 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(mr->addr, buf_ + 100);
  EXPECT_EQ(mr->length, 4u * 4096);
  EXPECT_EQ(mr->lkey, mr->rkey);
  EXPECT_EQ(mr->pd, pd_);
  EXPECT_EQ(mr->context, verbs_);
  const auto* dmr = driver::Mr::From(mr);
  EXPECT_EQ(dmr->mr_type, 0);  // IBV_MR_TYPE_MR, what libibverbs reads after ibv_mr
  EXPECT_EQ(dmr->access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(sim_->dma_mappings(), before + 1);  // once per region

  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.access_mode_1_0), uint32_t{prm::MKC_ACCESS_MODE_MTT});
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), reinterpret_cast<uintptr_t>(buf_ + 100));
  EXPECT_EQ(q.get(kQueriedMkc.len), 4u * 4096);
  EXPECT_EQ(q.get(kQueriedMkc.mkey_7_0), mr->lkey & 0xff);
  EXPECT_EQ(q.get(kQueriedMkc.pd), pdn());
  EXPECT_EQ(q.get(kQueriedMkc.lw), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.rr), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.rw), 0u);
  EXPECT_EQ(q.get(kQueriedMkc.a), 0u);
  EXPECT_EQ(q.get(kQueriedMkc.umr_en), 1u);  // every host MR, as mlx5_ib makes them
  EXPECT_EQ(q.get(kQueriedMkc.log_page_size), 12u);
  EXPECT_EQ(q.get(kQueriedMkc.translations_octword_size), 3u);  // 5 entries, 2 per octoword
  // Consecutive page IOVAs: entries 0..3 come back in the first two octowords.
  const uint64_t e0 = q.get(prm::Element<64>{prm::query_mkey_out::bsf0_klm0_pas_mtt0_1.bit_offset, "mtt0"});
  for (uint64_t i = 1; i < 4; ++i) {
    const uint64_t ei = q.get(prm::Element<64>{prm::query_mkey_out::bsf0_klm0_pas_mtt0_1.bit_offset + i * 64, "mtt"});
    EXPECT_EQ(ei, e0 + i * 4096) << i;
  }
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(sim_->dma_mappings(), before);  // the pages are unmapped with the key
}

TEST_F(MrMwTest, HostMrAccessChecksAreTheKernels) {
  const auto before = sim_->counters().commands;
  struct Case {
    unsigned access;
    int err;
  } cases[] = {
      {IBV_ACCESS_REMOTE_WRITE, EINVAL},                         // remote write, no local write
      {IBV_ACCESS_REMOTE_ATOMIC, EINVAL},                        // atomic, no local write
      {IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, EINVAL},
      {1u << 12, EINVAL},                                        // not an access bit
      {IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE, EOPNOTSUPP},  // no ODP
  };
  for (const Case& c : cases) {
    errno = 0;
    EXPECT_EQ(Reg(0, 4096, c.access), nullptr) << c.access;
    EXPECT_EQ(errno, c.err) << c.access;
  }
  EXPECT_EQ(sim_->counters().commands, before);  // refused before the device
  // MW_BIND, remote access with local write, and the optional-range bits are fine.
  const unsigned oks[] = {IBV_ACCESS_MW_BIND,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ,
                          0u, IBV_ACCESS_RELAXED_ORDERING};
  for (unsigned ok : oks) {
    ibv_mr* mr = Reg(0, 4096, ok);
    ASSERT_NE(mr, nullptr) << ok << " " << strerror(errno);
    EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.umr_en), 1u);
    EXPECT_EQ(v::dereg_mr(mr), 0);
  }
}

TEST_F(MrMwTest, HostMrRangeChecks) {
  errno = 0;
  EXPECT_EQ(Reg(0, 0, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // iova with another offset inside its page than addr.
  errno = 0;
  EXPECT_EQ(v::reg_mr(pd_, buf_, 4096, reinterpret_cast<uintptr_t>(buf_) + 8, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // A different iova with the same page offset is fine: the mkey starts there.
  ibv_mr* mr = v::reg_mr(pd_, buf_ + 8, 4096, 0x10000008, 0);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.start_addr), 0x10000008u);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

// ---- memory windows ----

TEST_F(MrMwTest, WindowsOfBothTypesAreFreeKlmMkeys) {
  for (ibv_mw_type type : {IBV_MW_TYPE_1, IBV_MW_TYPE_2}) {
    ibv_mw* mw = v::alloc_mw(pd_, type);
    ASSERT_NE(mw, nullptr) << strerror(errno);
    EXPECT_EQ(mw->type, type);
    EXPECT_EQ(mw->pd, pd_);
    EXPECT_EQ(mw->context, verbs_);
    auto q = QueryMkey(mw->rkey);  // the rkey is the mkey
    EXPECT_EQ(q.get(kQueriedMkc.free), 1u);
    EXPECT_EQ(q.get(kQueriedMkc.umr_en), 1u);
    EXPECT_EQ(q.get(kQueriedMkc.access_mode_1_0), uint32_t{prm::MKC_ACCESS_MODE_KLMS});
    EXPECT_EQ(q.get(kQueriedMkc.en_rinval), type == IBV_MW_TYPE_2 ? 1u : 0u);
    EXPECT_EQ(q.get(kQueriedMkc.qpn), 0xffffffu);
    EXPECT_EQ(q.get(kQueriedMkc.pd), pdn());
    EXPECT_EQ(q.get(kQueriedMkc.mkey_7_0), mw->rkey & 0xff);
    EXPECT_EQ(q.get(kQueriedMkc.translations_octword_size), 4u);
    EXPECT_EQ(v::dealloc_pd(pd_), EBUSY);  // the window pins its PD
    EXPECT_EQ(v::dealloc_mw(mw), 0);
  }
}

TEST_F(MrMwTest, OtherWindowTypesFail) {
  for (int type : {0, 3, 255}) {
    errno = 0;
    EXPECT_EQ(v::alloc_mw(pd_, static_cast<ibv_mw_type>(type)), nullptr) << type;
    EXPECT_EQ(errno, EINVAL) << type;
  }
}

TEST_F(MrMwTest, DeviceWithoutWindowsIsEopnotsupp) {
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  sim::DeviceConfig config;
  config.imaicl = false;
  Open(config);
  pd_ = v::alloc_pd(verbs_);
  errno = 0;
  EXPECT_EQ(v::alloc_mw(pd_, IBV_MW_TYPE_1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(MrMwTest, IncRkeyBumpsOnlyTheKeyByte) {
  EXPECT_EQ(driver::NextRkey(0x12345678), 0x12345679u);
  EXPECT_EQ(driver::NextRkey(0x123456ff), 0x12345600u);
  EXPECT_EQ(driver::NextRkey(0xffffffff), 0xffffff00u);
  EXPECT_EQ(driver::NextRkey(0xabcdef00), ibv_inc_rkey(0xabcdef00));
}

TEST_F(MrMwTest, BindChecksInRdmaCoresOrder) {
  ibv_mr* mr = Reg(0, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ibv_mw* t1 = v::alloc_mw(pd_, IBV_MW_TYPE_1);
  ibv_mw* t2 = v::alloc_mw(pd_, IBV_MW_TYPE_2);
  ibv_pd* other = v::alloc_pd(verbs_);
  ibv_mr* other_mr = v::reg_mr(other, buf_, 4096, reinterpret_cast<uintptr_t>(buf_), 0);
  ASSERT_TRUE(mr && t1 && t2 && other && other_mr);
  auto err = [](const Result<void>& r) { return r ? 0 : r.error().errno_value(); };
  const auto addr = reinterpret_cast<uint64_t>(buf_);
  const ibv_mw_bind_info good{.mr = mr, .addr = addr, .length = 4096,
                              .mw_access_flags = IBV_ACCESS_REMOTE_READ};
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), good, true)), 0);
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t2), good, true)), EINVAL);  // verb: type 1
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t2), good, false)), 0);
  ibv_mw_bind_info no_mr{.mr = nullptr, .addr = addr, .length = 0, .mw_access_flags = 0};
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), no_mr, true)), EINVAL);
  no_mr.addr = 0;
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), no_mr, true)), 0);
  ibv_mw_bind_info foreign = good;
  foreign.mr = other_mr;
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), foreign, true)), EPERM);
  ibv_mw_bind_info zb = good;
  zb.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), zb, true)), EINVAL);
  ibv_mw_bind_info huge = good;
  huge.length = (uint64_t{1} << 31) + 1;
  EXPECT_EQ(err(driver::CheckBind(*driver::Mw::From(t1), huge, true)), EOPNOTSUPP);
  EXPECT_EQ(v::dereg_mr(other_mr), 0);
  EXPECT_EQ(v::dealloc_pd(other), 0);
  EXPECT_EQ(v::dealloc_mw(t1), 0);
  EXPECT_EQ(v::dealloc_mw(t2), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

// As on mlx5, every host MR is created with umr_en (the kernel's reg_create), so IBV_ACCESS_MW_BIND
// is bookkeeping: the device binds a window on any MR of the window's PD.
TEST_F(MrMwTest, DeviceBindsAWindowOnAnyMrOfItsPd) {
  ibv_mr* bindable = Reg(0, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ibv_mr* plain = Reg(8192, 8192, IBV_ACCESS_LOCAL_WRITE);
  ibv_mw* mw = v::alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_TRUE(bindable && plain && mw);
  const auto base = reinterpret_cast<uint64_t>(buf_);

  ibv_mw_bind_info info{.mr = plain, .addr = base + 8192, .length = 4096,
                        .mw_access_flags = IBV_ACCESS_REMOTE_READ};
  uint32_t plain_rkey = driver::NextRkey(mw->rkey);
  auto on_plain = Bind(mw, plain_rkey, info);
  ASSERT_TRUE(on_plain.ok()) << sim::UmrCheckName(on_plain.check);
  mw->rkey = plain_rkey;
  info = {.mr = plain, .addr = 0, .length = 0, .mw_access_flags = 0};
  plain_rkey = driver::NextRkey(mw->rkey);
  ASSERT_TRUE(Bind(mw, plain_rkey, info).ok());  // unbound again
  mw->rkey = plain_rkey;
  EXPECT_EQ(QueryMkey(mw->rkey).get(kQueriedMkc.free), 1u);

  info = {.mr = bindable, .addr = base + 4096, .length = 4096,
          .mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE};
  const uint32_t rkey = driver::NextRkey(mw->rkey);
  auto bound = Bind(mw, rkey, info);
  ASSERT_TRUE(bound.ok()) << sim::UmrCheckName(bound.check);
  mw->rkey = rkey;  // what mlx5_bind_mw does on success
  auto q = QueryMkey(mw->rkey);
  EXPECT_EQ(q.get(kQueriedMkc.free), 0u);
  EXPECT_EQ(q.get(kQueriedMkc.mkey_7_0), rkey & 0xff);
  EXPECT_EQ(q.get(kQueriedMkc.start_addr), base + 4096);
  EXPECT_EQ(q.get(kQueriedMkc.len), 4096u);
  EXPECT_EQ(q.get(kQueriedMkc.rr), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.rw), 1u);
  // A bound window holds its MR: deregistering fails and the MR stays usable.
  EXPECT_NE(v::dereg_mr(bindable), 0);
  EXPECT_EQ(QueryMkey(bindable->lkey).get(kQueriedMkc.len), 8192u);

  // Out of the MR's range: refused by the device.
  ibv_mw_bind_info outside{.mr = bindable, .addr = base + 4096, .length = 8192,
                           .mw_access_flags = IBV_ACCESS_REMOTE_READ};
  EXPECT_EQ(Bind(mw, driver::NextRkey(mw->rkey), outside).check, sim::UmrCheck::PARENT_RANGE);

  // A zero-length type-1 bind unbinds; then the MR can go.
  ibv_mw_bind_info unbind{.mr = bindable, .addr = base, .length = 0, .mw_access_flags = 0};
  ASSERT_TRUE(Bind(mw, driver::NextRkey(mw->rkey), unbind).ok());
  EXPECT_EQ(QueryMkey(mw->rkey).get(kQueriedMkc.free), 1u);
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  EXPECT_EQ(v::dereg_mr(bindable), 0);
  EXPECT_EQ(v::dereg_mr(plain), 0);
}

TEST_F(MrMwTest, TypeTwoWindowMustBeFreeToBind) {
  ibv_mr* mr = Reg(0, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  ibv_mw* mw = v::alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_TRUE(mr && mw);
  const ibv_mw_bind_info info{.mr = mr, .addr = reinterpret_cast<uint64_t>(buf_), .length = 4096,
                              .mw_access_flags = IBV_ACCESS_REMOTE_READ};
  const uint32_t k1 = driver::NextRkey(mw->rkey);
  ASSERT_TRUE(Bind(mw, k1, info).ok());
  mw->rkey = k1;
  EXPECT_EQ(QueryMkey(k1).get(kQueriedMkc.qpn), kQpn);  // bound to the posting QP
  EXPECT_EQ(Bind(mw, driver::NextRkey(k1), info).check, sim::UmrCheck::MW_NOT_FREE);
  // Invalidate (zero length), then it binds again.
  const ibv_mw_bind_info inv{.mr = nullptr, .addr = 0, .length = 0, .mw_access_flags = 0};
  ASSERT_TRUE(Bind(mw, k1, inv).ok());
  const uint32_t k2 = driver::NextRkey(k1);
  ASSERT_TRUE(Bind(mw, k2, info).ok());
  mw->rkey = k2;
  ASSERT_TRUE(Bind(mw, k2, inv).ok());
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

// ---- MRs with DMA handles ----

TEST_F(MrMwTest, DmaHandleSetsTheMkeysTphFieldsAndIsPinned) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  uint32_t cpu = 0;
  while (!CPU_ISSET(cpu, &set)) ++cpu;
  ibv_dmah_init_attr attr{};
  attr.comp_mask = IBV_DMAH_INIT_ATTR_MASK_PH | IBV_DMAH_INIT_ATTR_MASK_CPU_ID |
                   IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
  attr.ph = 2;
  attr.cpu_id = cpu;
  attr.tph_mem_type = IBV_TPH_MEM_TYPE_VM;
  ibv_dmah* dmah = v::alloc_dmah(verbs_, &attr);
  ASSERT_NE(dmah, nullptr) << strerror(errno);

  ibv_mr_init_attr mattr{};
  mattr.length = 8192;
  mattr.access = IBV_ACCESS_LOCAL_WRITE;
  mattr.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH;
  mattr.addr = buf_;
  mattr.dmah = dmah;
  ibv_mr* mr = v::reg_mr_ex(pd_, &mattr);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(mr->addr, buf_);
  auto q = QueryMkey(mr->lkey);
  EXPECT_EQ(q.get(kQueriedMkc.pcie_tph_en), 1u);
  EXPECT_EQ(q.get(kQueriedMkc.pcie_tph_ph), 2u);
  const uint8_t index = driver::Dmah::From(dmah)->st_index;
  EXPECT_NE(index, 0);
  EXPECT_EQ(q.get(kQueriedMkc.pcie_tph_steering_tag_index), index);
  // The device steers this MR's DMA with the tag programmed for (cpu, VM).
  auto hint = sim_->firmware().MkeyTph(mr->lkey);
  ASSERT_TRUE(hint);
  EXPECT_EQ(hint->ph, 2);
  EXPECT_EQ(hint->steering_tag, driver::SteeringTagTable::TagFor(cpu, IBV_TPH_MEM_TYPE_VM));

  EXPECT_EQ(v::dealloc_dmah(dmah), EBUSY);  // the MR uses it
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_dmah(dmah), 0);
}

TEST_F(MrMwTest, RegMrExChecksItsMask) {
  ibv_mr_init_attr attr{};
  attr.length = 4096;
  attr.addr = buf_;
  attr.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD;  // exclusive
  errno = 0;
  EXPECT_EQ(v::reg_mr_ex(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  attr.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD_OFFSET;
  errno = 0;
  EXPECT_EQ(v::reg_mr_ex(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  attr.comp_mask = IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_IOVA;
  errno = 0;
  EXPECT_EQ(v::reg_mr_ex(pd_, &attr), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);  // no dma-buf import
  attr.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_IOVA;
  attr.iova = 0x7000'0000'0000ull + (reinterpret_cast<uintptr_t>(buf_) & 4095);
  ibv_mr* mr = v::reg_mr_ex(pd_, &attr);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.start_addr), attr.iova);
  EXPECT_EQ(QueryMkey(mr->lkey).get(kQueriedMkc.pcie_tph_en), 0u);
  EXPECT_EQ(v::dereg_mr(mr), 0);
}

TEST_F(MrMwTest, CloseDestroysLiveWindowsAndMrs) {
  ibv_mr* mr = Reg(0, 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_mw* mw = v::alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_TRUE(mr && mw);
  const auto report = ctx_->Close();
  EXPECT_FALSE(report.first_error) << report.describe();
  EXPECT_EQ(report.of(driver::ObjectKind::kMw), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kMr), 1u);
  EXPECT_EQ(report.of(driver::ObjectKind::kPd), 1u);
  EXPECT_EQ(sim_->counters().mkeys, 0u);
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::dealloc_pd(pd_), 0);
  pd_ = nullptr;
  ctx_.reset();
  EXPECT_EQ(sim_->dma_mappings(), 0u);  // the MR's pages went with its key
}

}  // namespace
}  // namespace onchip::testing
