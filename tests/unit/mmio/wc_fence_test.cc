// The fences of the copies to the device, checked in the machine code this build really
// produced. Every to-device variant's copy function (every one this build has, whether this CPU
// can run it or not) is disassembled with what it calls and jumps to:
//  - a variant whose line stores are weakly ordered even on write-back memory (weak_lines: nt,
//    movdir64b) passes an SFENCE after its last such store on every way out, including the tail
//    call into the unaligned walk, so the copy is ordered as plain stores are;
//  - every other variant issues no fence at all: its ordering point on write-combining memory is
//    the next doorbell's WcStart, as for rdma-core's mlx5_memcpy_to_dm (mmio/README.md).
// A kernel whose AfterLines() lost its WcFlush, a compiler that sank a store below it, or a fence
// that crept back into the plain variants fails here; the recording walk in wc_walk_test.cc
// cannot see these, because it replaces the kernel.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "mmio/wc_copy.h"
#include "tests/unit/mmio/disassembly.h"

namespace onchip::mmio {
namespace {

using testing::Disassembly;
using testing::EndsWithFenceAfterLastStore;

const void* Code(auto fn) { return reinterpret_cast<const void*>(fn); }

// The disassembly of the file holding `fn`, and `fn` in it (test failures when either is missing).
struct Disassembled {
  std::optional<Disassembly> dis;
  const testing::Function* fn = nullptr;
};
Disassembled Disassemble(auto code) {
  Disassembled d;
  std::string error;
  d.dis = Disassembly::Of(Code(code), &error);
  EXPECT_TRUE(d.dis) << error;
  if (d.dis) d.fn = d.dis->At(Code(code));
  EXPECT_NE(d.fn, nullptr) << "no symbol for the function";
  return d;
}

TEST(WcFence, WeaklyOrderedLineStoresAreFencedOnEveryWayOut) {
  int checked = 0;
  for (const ToDeviceVariant& v : ToDeviceVariants()) {
    if (!v.weak_lines) continue;
    SCOPED_TRACE(std::string(v.name));
    const Disassembled d = Disassemble(v.copy);
    if (d.fn == nullptr) continue;
    std::string why;
    EXPECT_TRUE(EndsWithFenceAfterLastStore(*d.dis, *d.fn, "sfence", &why,
                                            testing::IsWeaklyOrderedStore))
        << why;
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "nt and movdir64b";
}

TEST(WcFence, PlainStoreCopiesIssueNoFence) {
  int checked = 0;
  for (const ToDeviceVariant& v : ToDeviceVariants()) {
    if (v.weak_lines) continue;
    SCOPED_TRACE(std::string(v.name));
    const Disassembled d = Disassemble(v.copy);
    if (d.fn == nullptr) continue;
    std::string where;
    EXPECT_FALSE(testing::ReachesFence(*d.dis, *d.fn, "sfence", &where)) << "sfence at " << where;
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

// The checks can fail on real kernel code: a line kernel leaves its fence to the caller
// (WcLockGuard), so the every-store check rejects it; the nt copy fences, so ReachesFence finds it.
TEST(WcFence, TheChecksCanFail) {
  for (const ToDeviceVariant& v : ToDeviceVariants()) {
    SCOPED_TRACE(std::string(v.name));
    const Disassembled d = Disassemble(v.line64);
    if (d.fn == nullptr) continue;
    std::string why;
    EXPECT_FALSE(EndsWithFenceAfterLastStore(*d.dis, *d.fn, "sfence", &why));
    EXPECT_NE(why.find("returns with a store after the last sfence"), std::string::npos) << why;
  }
  const ToDeviceVariant* nt = FindToDevice("nt");
  ASSERT_NE(nt, nullptr);
  const Disassembled d = Disassemble(nt->copy);
  ASSERT_NE(d.fn, nullptr);
  std::string where;
  EXPECT_TRUE(testing::ReachesFence(*d.dis, *d.fn, "sfence", &where));
}

}  // namespace
}  // namespace onchip::mmio
