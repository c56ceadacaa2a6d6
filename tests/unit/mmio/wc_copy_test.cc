// Every copy variant this CPU supports, against every alignment the contract allows and many it
// does not: the bytes land exactly, no byte outside the range is written, no byte outside the
// source range is read (guard pages), and the one-line BlueFlame kernel writes exactly its line.
#include "mmio/wc_copy.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace onchip::mmio {
namespace {

constexpr unsigned char kGuard = 0xA5;
constexpr std::size_t kPad = 256;

// Lengths: every length up to 256, then every length within 8 bytes of a multiple of 64 up to
// 4 KiB (the edges where head, full lines and tail change shape), then large ones.
std::vector<std::size_t> Lengths() {
  std::vector<std::size_t> out;
  for (std::size_t n = 0; n <= 256; ++n) out.push_back(n);
  for (std::size_t line = 320; line <= 4096; line += 64)
    for (std::size_t n = line - 8; n <= line + 8; ++n) out.push_back(n);
  for (std::size_t n : {65536ul, 65536ul + 4, 65536ul + 60, (1ul << 20) - 4, (1ul << 20) + 68})
    out.push_back(n);
  return out;
}

struct Buffers {
  explicit Buffers(std::size_t max_len)
      : src(max_len + 2 * kPad), dst_bytes(max_len + 2 * kPad + 128) {
    std::mt19937 rng(7);
    for (auto& b : src) b = static_cast<unsigned char>(rng() | 1);  // never the guard value
    for (auto& b : src)
      if (b == kGuard) b = 0x5A;
    // A 64-byte aligned base so that offsets below name the position within a line.
    auto base = reinterpret_cast<std::uintptr_t>(dst_bytes.data());
    dst = dst_bytes.data() + ((64 - (base & 63)) & 63);
    std::memset(dst_bytes.data(), kGuard, dst_bytes.size());
  }
  std::vector<unsigned char> src;
  std::vector<unsigned char> dst_bytes;
  unsigned char* dst;
};

// Checks one copy of `len` bytes from src+so to dst+kPad+doff, then restores the guard value.
template <class Copy>
::testing::AssertionResult CopyAndCheck(Buffers& b, Copy copy, std::size_t doff, std::size_t so,
                                        std::size_t len) {
  unsigned char* d = b.dst + kPad + doff;
  const unsigned char* s = b.src.data() + kPad + so;
  copy(d, s, len);
  if (std::memcmp(d, s, len) != 0) {
    std::size_t i = 0;
    while (d[i] == s[i]) ++i;
    return ::testing::AssertionFailure() << "byte " << i << " differs (dst offset " << doff
                                         << ", src offset " << so << ", len " << len << ")";
  }
  for (unsigned char* p = d - kPad; p != d; ++p)
    if (*p != kGuard)
      return ::testing::AssertionFailure() << "wrote " << (d - p) << " bytes before dst (dst offset "
                                           << doff << ", len " << len << ")";
  for (unsigned char* p = d + len; p != d + len + kPad; ++p)
    if (*p != kGuard)
      return ::testing::AssertionFailure() << "wrote byte " << (p - d) << " past dst (dst offset "
                                           << doff << ", len " << len << ")";
  std::memset(d, kGuard, len);
  return ::testing::AssertionSuccess();
}

std::string SkipReason(Isa needs) {
  return "this CPU lacks " + std::string(IsaName(needs));
}

class ToDevice : public ::testing::TestWithParam<std::string_view> {
 protected:
  void SetUp() override {
    variant_ = FindToDevice(GetParam());
    ASSERT_NE(variant_, nullptr);
    if (!CpuHas(variant_->needs, DetectCpuFeatures()))
      GTEST_SKIP() << variant_->name << ": " << SkipReason(variant_->needs);
  }
  const ToDeviceVariant* variant_ = nullptr;
};

// The device contract: dst and len multiples of 4, src anywhere.
TEST_P(ToDevice, ExactOnEveryContractAlignmentAndLength) {
  const auto lengths = Lengths();
  Buffers b(lengths.back());
  for (std::size_t doff = 0; doff < 64; doff += 4)
    for (std::size_t so : {0, 1, 2, 3, 4, 7, 8, 16, 33, 63})
      for (std::size_t len : lengths) {
        if (len % 4 != 0) continue;
        if (len > 8192 && doff % 16 != 0) continue;  // large: a few alignments are enough
        ASSERT_TRUE(CopyAndCheck(b, variant_->copy, doff, so, len)) << variant_->name;
      }
}

// Outside the device contract (host memory): still exact.
TEST_P(ToDevice, ExactOnUnalignedDestinationAndOddLength) {
  Buffers b(4200);
  for (std::size_t doff = 0; doff < 64; ++doff)
    for (std::size_t so : {0, 1, 5})
      for (std::size_t len = 0; len <= 200; ++len)
        ASSERT_TRUE(CopyAndCheck(b, variant_->copy, doff, so, len)) << variant_->name;
  for (std::size_t doff : {1, 3, 62})
    for (std::size_t len = 4030; len <= 4100; ++len)
      ASSERT_TRUE(CopyAndCheck(b, variant_->copy, doff, 3, len)) << variant_->name;
}

TEST_P(ToDevice, Line64WritesExactlyOneLine) {
  Buffers b(64);
  for (std::size_t so : {0, 1, 8, 63}) {
    auto line = [&](void* d, const void* s, std::size_t) { variant_->line64(d, s); };
    ASSERT_TRUE(CopyAndCheck(b, line, 0, so, 64)) << variant_->name;
  }
}

// Three pages: PROT_NONE, data, PROT_NONE. A copy that touches a byte outside its range faults.
class GuardedPage {
 public:
  GuardedPage() : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    void* p = mmap(nullptr, 3 * page_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<unsigned char*>(p);
    EXPECT_EQ(mprotect(base_ + page_, page_, PROT_READ | PROT_WRITE), 0);
  }
  ~GuardedPage() { munmap(base_, 3 * page_); }
  unsigned char* begin() const { return base_ + page_; }
  unsigned char* end() const { return base_ + 2 * page_; }
  std::size_t size() const { return page_; }

 private:
  std::size_t page_;
  unsigned char* base_ = nullptr;
};

TEST_P(ToDevice, TouchesNothingOutsideSourceAndDestination) {
  GuardedPage src, dst;
  for (std::size_t i = 0; i < src.size(); ++i) src.begin()[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t len : {4ul, 60ul, 64ul, 68ul, 252ul, 1024ul, 4092ul, 4096ul}) {
    for (std::size_t sgap : {0ul, 1ul, 4ul})
      for (std::size_t dgap : {0ul, 4ul, 60ul}) {
        if (len + sgap > src.size() || len + dgap > dst.size()) continue;
        // Flush against the end of both pages, then against the start.
        unsigned char* d = dst.end() - len - dgap;
        const unsigned char* s = src.end() - len - sgap;
        variant_->copy(d, s, len);
        ASSERT_EQ(std::memcmp(d, s, len), 0) << variant_->name << " len " << len;
        d = dst.begin() + dgap;
        s = src.begin() + sgap;
        variant_->copy(d, s, len);
        ASSERT_EQ(std::memcmp(d, s, len), 0) << variant_->name << " len " << len;
      }
  }
}

std::vector<std::string_view> ToDeviceNames() {
  std::vector<std::string_view> names;
  for (const auto& v : ToDeviceVariants()) names.push_back(v.name);
  return names;
}
INSTANTIATE_TEST_SUITE_P(Variants, ToDevice, ::testing::ValuesIn(ToDeviceNames()),
                         [](const auto& test_param) { return std::string(test_param.param); });

class FromDevice : public ::testing::TestWithParam<std::string_view> {
 protected:
  void SetUp() override {
    variant_ = FindFromDevice(GetParam());
    ASSERT_NE(variant_, nullptr);
    if (!CpuHas(variant_->needs, DetectCpuFeatures()))
      GTEST_SKIP() << variant_->name << ": " << SkipReason(variant_->needs);
  }
  const FromDeviceVariant* variant_ = nullptr;
};

// Here the device is the source: its offset is what the contract constrains.
TEST_P(FromDevice, ExactOnEveryContractAlignmentAndLength) {
  const auto lengths = Lengths();
  Buffers b(lengths.back());
  // Swap roles: the 64-byte aligned buffer plays the device (source).
  std::vector<unsigned char> host(lengths.back() + 2 * kPad + 64);
  for (std::size_t i = 0; i < lengths.back() + 2 * kPad; ++i) b.dst[i] = b.src[i];
  for (std::size_t soff = 0; soff < 64; soff += 4)
    for (std::size_t hoff : {0, 1, 3, 8, 33})
      for (std::size_t len : lengths) {
        if (len % 4 != 0) continue;
        if (len > 8192 && soff % 16 != 0) continue;
        unsigned char* h = host.data() + kPad + hoff;
        std::memset(h - kPad, kGuard, len + 2 * kPad);
        const unsigned char* dev = b.dst + kPad + soff;
        variant_->copy(h, dev, len);
        ASSERT_EQ(std::memcmp(h, dev, len), 0) << variant_->name << " soff " << soff << " len " << len;
        for (std::size_t i = 0; i < kPad; ++i) {
          ASSERT_EQ(h[-1 - static_cast<std::ptrdiff_t>(i)], kGuard) << "before, len " << len;
          ASSERT_EQ(h[len + i], kGuard) << "after, len " << len;
        }
      }
}

TEST_P(FromDevice, TouchesNothingOutsideSourceAndDestination) {
  GuardedPage dev, host;
  for (std::size_t i = 0; i < dev.size(); ++i) dev.begin()[i] = static_cast<unsigned char>(i * 5 + 3);
  for (std::size_t len : {4ul, 60ul, 64ul, 68ul, 1020ul, 4092ul, 4096ul})
    for (std::size_t gap : {0ul, 4ul, 60ul}) {
      if (len + gap > dev.size()) continue;
      const unsigned char* s = dev.end() - len - gap;
      unsigned char* h = host.end() - len - (gap ? 1 : 0);
      variant_->copy(h, s, len);
      ASSERT_EQ(std::memcmp(h, s, len), 0) << variant_->name;
      s = dev.begin() + gap;
      h = host.begin() + (gap ? 3 : 0);
      variant_->copy(h, s, len);
      ASSERT_EQ(std::memcmp(h, s, len), 0) << variant_->name;
    }
}

std::vector<std::string_view> FromDeviceNames() {
  std::vector<std::string_view> names;
  for (const auto& v : FromDeviceVariants()) names.push_back(v.name);
  return names;
}
INSTANTIATE_TEST_SUITE_P(Variants, FromDevice, ::testing::ValuesIn(FromDeviceNames()),
                         [](const auto& test_param) { return std::string(test_param.param); });

// The dispatched entry points reach the active kernels and are exact.
TEST(Dispatch, ActiveEntryPointsCopyExactly) {
  Buffers b(4096);
  ASSERT_TRUE(CopyAndCheck(b, CopyToDevice, 4, 1, 4092));
  ASSERT_TRUE(CopyAndCheck(b, CopyFromDevice, 8, 3, 4000));
  auto line = [](void* d, const void* s, std::size_t) { BlueFlameCopy64(d, s); };
  ASSERT_TRUE(CopyAndCheck(b, line, 64, 5, 64));
}

}  // namespace
}  // namespace onchip::mmio
