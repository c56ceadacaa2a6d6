// The private-ABI constants onchip declares itself (Debian installs no <infiniband/driver.h>),
// checked against the installed headers that do carry them: libibverbs' verbs.h for the sysfs
// name sizes, the kernel's rdma/ib_user_ioctl_verbs.h for the core-support bit; and, where no
// installed header has the value, against the numbers of rdma-core's driver.h as the provider-ABI
// reference records them.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "uapi/verbs/abi34.h"

namespace onchip::ibverbs_abi {
namespace {

TEST(Abi34Constants, SysfsSizesAreVerbsH) {
  EXPECT_EQ(kSysfsNameMax, std::size_t{IBV_SYSFS_NAME_MAX});
  EXPECT_EQ(kSysfsPathMax, std::size_t{IBV_SYSFS_PATH_MAX});
}

TEST(Abi34Constants, CoreSupportBitIsTheKernels) {
  EXPECT_EQ(kCoreSupportOptionalMrAccess, uint64_t{IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS});
}

// driver.h (not installed): enum verbs_match_kind and enum ibv_mr_type, in declaration order.
TEST(Abi34Constants, MatchKindsAndMrTypesAreDriverHs) {
  EXPECT_EQ(kMatchSentinel, 0);
  EXPECT_EQ(kMatchPci, 1);
  EXPECT_EQ(kMatchModalias, 2);
  EXPECT_EQ(kMatchDriverId, 3);
  EXPECT_EQ(IBV_MR_TYPE_MR, 0);
  EXPECT_EQ(IBV_MR_TYPE_NULL_MR, 1);
  EXPECT_EQ(IBV_MR_TYPE_IMPORTED_MR, 2);
  EXPECT_EQ(IBV_MR_TYPE_DMABUF_MR, 3);
}

}  // namespace
}  // namespace onchip::ibverbs_abi
