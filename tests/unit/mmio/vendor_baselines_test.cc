// The vendor baselines the benchmarks compare against copy exactly what they should; a baseline
// that did less work would flatter onchip.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/baselines/vendor_mmio.h"

namespace onchip::bench {
namespace {

TEST(VendorBaselines, DmCopiesAreExactInBothDirections) {
  alignas(64) uint32_t dm[1030];
  alignas(64) uint32_t host[1030];
  alignas(64) uint32_t back[1030];
  for (std::size_t i = 0; i < 1030; ++i) host[i] = static_cast<uint32_t>(i * 2654435761u);
  for (std::size_t len = 0; len <= 4096; len += 4) {
    std::memset(dm, 0xee, sizeof dm);
    std::memset(back, 0xdd, sizeof back);
    VendorCopyToDm(dm + 1, host, len);
    ASSERT_EQ(std::memcmp(dm + 1, host, len), 0);
    ASSERT_EQ(dm[0], 0xeeeeeeeeu);
    ASSERT_EQ(dm[1 + len / 4], 0xeeeeeeeeu);
    VendorCopyFromDm(back, dm + 1, len);
    ASSERT_EQ(std::memcmp(back, host, len), 0);
    ASSERT_EQ(back[len / 4], 0xddddddddu);
  }
}

TEST(VendorBaselines, BfCopyWritesWholeBlocks) {
  alignas(64) uint64_t dst[66];
  alignas(64) uint64_t src[64];
  for (std::size_t i = 0; i < 64; ++i) src[i] = i * 0x9e3779b97f4a7c15ull;
  for (std::size_t blocks = 1; blocks <= 8; ++blocks) {
    std::memset(dst, 0, sizeof dst);
    VendorBfCopy(dst, src, blocks * 64);
    VendorFlushWrites();
    ASSERT_EQ(std::memcmp(dst, src, blocks * 64), 0);
    ASSERT_EQ(dst[blocks * 8], 0u);
  }
}

}  // namespace
}  // namespace onchip::bench
