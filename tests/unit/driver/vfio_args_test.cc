// The VFIO bus without hardware: argument construction, and clear errors when /dev/vfio, the
// device or the IOMMU group is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "driver/bus/vfio/vfio_args.h"
#include "driver/bus/vfio/vfio_bus.h"

namespace onchip::driver::bus {
namespace {

TEST(VfioArgs, CanonicalPciName) {
  EXPECT_EQ(*vfio::CanonicalPciName("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(*vfio::CanonicalPciName("0:3B:1f.7"), "0000:3b:1f.7");
  for (const char* bad : {"", "3b:00.0", "0000:3b:00", "0000:3b:20.0", "0000:3b:00.8",
                          "00000:3b:00.0", "0000:3b:00.0x", "zzzz:3b:00.0", "0000:3b:00.-1"}) {
    auto r = vfio::CanonicalPciName(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().errno_value(), EINVAL) << bad;
  }
}

TEST(VfioArgs, IommuGroupFromLink) {
  EXPECT_EQ(*vfio::IommuGroupFromLink("../../../kernel/iommu_groups/17"), 17);
  EXPECT_EQ(*vfio::IommuGroupFromLink("5"), 5);
  EXPECT_FALSE(vfio::IommuGroupFromLink("../../../kernel/iommu_groups/"));
  EXPECT_FALSE(vfio::IommuGroupFromLink("../iommu_groups/x1"));
  EXPECT_FALSE(vfio::IommuGroupFromLink("../iommu_groups/-3"));
}

TEST(VfioArgs, Paths) {
  EXPECT_EQ(vfio::IommuGroupLinkPath("/sys", "0000:3b:00.0"),
            "/sys/bus/pci/devices/0000:3b:00.0/iommu_group");
  EXPECT_EQ(vfio::GroupPath("/dev/vfio", 17), "/dev/vfio/17");
}

TEST(VfioArgs, DmaMapAndUnmap) {
  auto map = vfio::MakeDmaMap(0x7f0000001000, 0x100000, 0x2000);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->argsz, sizeof(vfio_iommu_type1_dma_map));
  EXPECT_EQ(map->flags, uint32_t{VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE});
  EXPECT_EQ(map->vaddr, 0x7f0000001000u);
  EXPECT_EQ(map->iova, 0x100000u);
  EXPECT_EQ(map->size, 0x2000u);
  EXPECT_FALSE(vfio::MakeDmaMap(0x1001, 0x100000, 0x1000));
  EXPECT_FALSE(vfio::MakeDmaMap(0x1000, 0x100800, 0x1000));
  EXPECT_FALSE(vfio::MakeDmaMap(0x1000, 0x100000, 0x800));
  EXPECT_FALSE(vfio::MakeDmaMap(0x1000, 0x100000, 0));
  EXPECT_FALSE(vfio::MakeDmaMap(0x1000, ~uint64_t{0xfff}, 0x2000));  // wraps

  vfio_iommu_type1_dma_unmap unmap;
  ASSERT_TRUE(vfio::MakeDmaUnmap(0x100000, 0x2000, unmap));
  EXPECT_EQ(unmap.argsz, sizeof(vfio_iommu_type1_dma_unmap));
  EXPECT_EQ(unmap.flags, 0u);
  EXPECT_EQ(unmap.iova, 0x100000u);
  EXPECT_EQ(unmap.size, 0x2000u);
  EXPECT_FALSE(vfio::MakeDmaUnmap(0x100001, 0x1000, unmap));
  EXPECT_FALSE(vfio::MakeDmaUnmap(0x100000, 0, unmap));
}

TEST(VfioArgs, RegionInfo) {
  vfio_region_info q = vfio::MakeRegionInfoQuery(VFIO_PCI_BAR0_REGION_INDEX);
  EXPECT_EQ(q.argsz, sizeof(vfio_region_info));
  EXPECT_EQ(q.index, uint32_t{VFIO_PCI_BAR0_REGION_INDEX});
  q.flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
  q.size = 32 << 20;
  EXPECT_TRUE(vfio::CheckBar0Region(q));
  q.flags &= ~VFIO_REGION_INFO_FLAG_MMAP;
  EXPECT_EQ(vfio::CheckBar0Region(q).error().errno_value(), ENODEV);
  q.flags |= VFIO_REGION_INFO_FLAG_MMAP;
  q.size = 0x800;
  EXPECT_EQ(vfio::CheckBar0Region(q).error().errno_value(), ENODEV);
}

class VfioOpen : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/onchip-vfio-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(VfioOpen, AbsentDevVfioIsEnoentWithContext) {
  VfioOptions opts{.sysfs_root = dir_ + "/sys", .dev_vfio = dir_ + "/no-such-dir"};
  auto bus = VfioBus::Open("0000:3b:00.0", opts);
  ASSERT_FALSE(bus);
  EXPECT_EQ(bus.error().errno_value(), ENOENT);
  EXPECT_NE(bus.error().describe().find("/dev/vfio/vfio"), std::string::npos)
      << bus.error().describe();
}

TEST_F(VfioOpen, BadPciNameIsEinvalBeforeAnyFile) {
  auto bus = VfioBus::Open("not-a-device", {.sysfs_root = dir_, .dev_vfio = dir_});
  ASSERT_FALSE(bus);
  EXPECT_EQ(bus.error().errno_value(), EINVAL);
}

TEST_F(VfioOpen, ContainerThatIsNotVfioIsRefused) {
  std::ofstream(dir_ + "/vfio") << "";  // a regular file: the API-version ioctl fails
  auto bus = VfioBus::Open("0000:3b:00.0", {.sysfs_root = dir_, .dev_vfio = dir_});
  ASSERT_FALSE(bus);
  EXPECT_EQ(bus.error().errno_value(), EINVAL);
  EXPECT_NE(bus.error().describe().find("API version"), std::string::npos)
      << bus.error().describe();
}

TEST(VfioHost, ThisMachineHasNoVfioOrSaysWhy) {
  // The real paths: on a machine without vfio the error is ENOENT (or EACCES without
  // permission), never a crash.
  if (access("/dev/vfio/vfio", F_OK) == 0) GTEST_SKIP() << "/dev/vfio present: tier3 covers it";
  auto bus = VfioBus::Open("0000:00:00.0");
  ASSERT_FALSE(bus);
  EXPECT_EQ(bus.error().errno_value(), ENOENT) << bus.error().describe();
}

}  // namespace
}  // namespace onchip::driver::bus
