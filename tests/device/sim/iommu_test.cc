// The IOMMU: mapping rules, bounds, and mappings changing under running commands.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tests/device/sim/sim_fixture.h"
#include "tools/sim/iommu.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {
namespace {

struct Buffer {
  explicit Buffer(std::size_t n) : p(static_cast<std::byte*>(std::aligned_alloc(4096, n))) {
    std::memset(p, 0, n);
  }
  ~Buffer() { std::free(p); }
  std::byte* p;
};

TEST(IommuTest, MapRules) {
  Iommu m;
  Buffer b(4 * 4096);
  EXPECT_EQ(m.Map({0x1000, 0, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1001, 4096, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1000, 100, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1000, 4096, nullptr}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({~uint64_t{0} & ~uint64_t{0xfff}, 8192, b.p}).error().errno_value(), EINVAL);
  ASSERT_TRUE(m.Map({0x2000, 2 * 4096, b.p}));
  EXPECT_EQ(m.Map({0x1000, 2 * 4096, b.p}).error().errno_value(), EINVAL);  // overlaps below
  EXPECT_EQ(m.Map({0x3000, 4096, b.p}).error().errno_value(), EINVAL);      // inside
  ASSERT_TRUE(m.Map({0x4000, 4096, b.p + 2 * 4096}));                        // adjacent is fine
  EXPECT_EQ(m.Unmap(0x2000, 4096).error().errno_value(), ENOENT);            // wrong length
  EXPECT_EQ(m.Unmap(0x3000, 4096).error().errno_value(), ENOENT);            // not a start
  ASSERT_TRUE(m.Unmap(0x2000, 2 * 4096));
  EXPECT_EQ(m.mapping_count(), 1u);
}

TEST(IommuTest, TranslationIsBoundedByOneMapping) {
  Iommu m;
  Buffer a(8192), b(4096);
  ASSERT_TRUE(m.Map({0x10000, 8192, a.p}));
  ASSERT_TRUE(m.Map({0x12000, 4096, b.p}));
  Iommu::Access acc(m);
  EXPECT_EQ(acc.Translate(0x10000, 8192), a.p);
  EXPECT_EQ(acc.Translate(0x11ff0, 16), a.p + 0x1ff0);
  EXPECT_EQ(acc.Translate(0x11ff0, 17), nullptr);  // straddles two mappings
  EXPECT_EQ(acc.Translate(0xf000, 16), nullptr);
  EXPECT_EQ(acc.Translate(0x13000, 1), nullptr);
  EXPECT_EQ(acc.Translate(~uint64_t{0} - 4, 16), nullptr);  // wraps
  EXPECT_EQ(acc.Translate(0x10000, 0), nullptr);
}

TEST(IommuTest, ReadWriteCopyOnlyInsideMappings) {
  Iommu m;
  Buffer a(4096);
  ASSERT_TRUE(m.Map({0x10000, 4096, a.p}));
  std::array<std::byte, 8> v{std::byte{1}, std::byte{2}};
  EXPECT_TRUE(m.Write(0x10ff8, v));
  EXPECT_EQ(a.p[0xff8], std::byte{1});
  EXPECT_FALSE(m.Write(0x10ffc, v));
  EXPECT_EQ(a.p[0xffc], std::byte{0});  // nothing partial
  std::array<std::byte, 8> r{};
  EXPECT_TRUE(m.Read(0x10ff8, r));
  EXPECT_EQ(r[1], std::byte{2});
  EXPECT_FALSE(m.Read(0x11000, r));
}

class IommuDeviceTest : public SimTest {};

TEST_F(IommuDeviceTest, MappingsChangeWhileCommandsRun) {
  BringUp();
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    Buffer b(4096);
    while (!stop.load()) {
      ASSERT_TRUE(sim_->MapDma({0x7000'0000, 4096, b.p}));
      ASSERT_TRUE(sim_->UnmapDma(0x7000'0000, 4096));
    }
  });
  for (int i = 0; i < 200; ++i) {
    auto r = Exec(Cmd<prm::alloc_pd_in>(prm::ALLOC_PD), 16);
    ASSERT_TRUE(Ok(r));
    auto d = Cmd<prm::dealloc_pd_in>(prm::DEALLOC_PD);
    d.set(prm::dealloc_pd_in::pd, r.get(prm::alloc_pd_out::pd));
    ASSERT_TRUE(Ok(Exec(d, 16)));
  }
  stop.store(true);
  churn.join();
  EXPECT_EQ(sim_->counters().pds, 0u);
  EXPECT_EQ(sim_->dma_mappings(), 1u);  // the writer's arena
}

}  // namespace
}  // namespace onchip::sim::testing
