// The fence every copy to the device ends with, checked in the machine code this build really
// produced: each to-device variant's copy function (every one this build has, whether this CPU
// can run it or not) is disassembled, and on every way out of it, including the tail call into
// the unaligned walk, an SFENCE follows the last store. A kernel whose End() lost its WcFlush,
// or a compiler that sank a store below it, fails here; the recording walk in wc_walk_test.cc
// cannot see either, because it replaces the kernel.
#include <gtest/gtest.h>

#include "mmio/wc_copy.h"
#include "tests/unit/mmio/disassembly.h"

namespace onchip::mmio {
namespace {

using testing::Disassembly;
using testing::EndsWithFenceAfterLastStore;

const void* Code(auto fn) { return reinterpret_cast<const void*>(fn); }

TEST(WcFence, EveryToDeviceCopyEndsWithSfenceAfterItsLastStore) {
  ASSERT_FALSE(ToDeviceVariants().empty());
  for (const ToDeviceVariant& v : ToDeviceVariants()) {
    SCOPED_TRACE(std::string(v.name));
    std::string error;
    auto dis = Disassembly::Of(Code(v.copy), &error);
    ASSERT_TRUE(dis) << error;
    const testing::Function* fn = dis->At(Code(v.copy));
    ASSERT_NE(fn, nullptr) << "no symbol for the copy function";
    std::string why;
    EXPECT_TRUE(EndsWithFenceAfterLastStore(*dis, *fn, "sfence", &why)) << why;
  }
}

// The line kernels are documented to leave the fence to their caller (WcLockGuard): the check
// rejects them, which also shows it can fail on real kernel code.
TEST(WcFence, LineKernelsCarryNoFenceAndTheCheckSaysSo) {
  for (const ToDeviceVariant& v : ToDeviceVariants()) {
    SCOPED_TRACE(std::string(v.name));
    std::string error;
    auto dis = Disassembly::Of(Code(v.line64), &error);
    ASSERT_TRUE(dis) << error;
    const testing::Function* fn = dis->At(Code(v.line64));
    ASSERT_NE(fn, nullptr);
    std::string why;
    EXPECT_FALSE(EndsWithFenceAfterLastStore(*dis, *fn, "sfence", &why));
    EXPECT_NE(why.find("returns with a store after the last sfence"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace onchip::mmio
