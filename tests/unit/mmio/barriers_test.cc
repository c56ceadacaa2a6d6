// WcLockGuard brackets its scope: the lock is taken on entry and released on exit, once each,
// with a fence after the lock and before the unlock. What each barrier costs is checked in the
// machine code of small functions using them (disassembled from this test binary): SFENCE for
// WcStart / WcFlush, LFENCE for FromDeviceBarrier, no instruction for ToDeviceBarrier and
// DmaReadBarrier.
#include "mmio/barriers.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "tests/unit/mmio/disassembly.h"

namespace onchip::mmio {
namespace {

using testing::Disassembly;
using testing::EndsWithFenceAfterLastStore;
using testing::Function;

struct RecordingLock {
  std::string log;
  void lock() { log += "L"; }
  void unlock() { log += "U"; }
};

TEST(WcLockGuard, LocksForExactlyItsScope) {
  RecordingLock lock;
  {
    WcLockGuard guard(lock);
    EXPECT_EQ(lock.log, "L");
  }
  EXPECT_EQ(lock.log, "LU");
}

TEST(WcLockGuard, WorksWithStdMutex) {
  std::mutex m;
  {
    WcLockGuard guard(m);
    EXPECT_FALSE(m.try_lock());
  }
  EXPECT_TRUE(m.try_lock());
  m.unlock();
}

// Out of line so that their calls stay visible in the disassembly.
struct ProbeLock {
  int depth = 0;
  [[gnu::noinline]] void lock() { asm volatile("incl %0" : "+m"(depth)); }
  [[gnu::noinline]] void unlock() { asm volatile("decl %0" : "+m"(depth)); }
};

// extern "C" keeps each a separate, named function the test can find by its address.
extern "C" {
[[gnu::noinline, gnu::used]] void onchip_probe_flushed_store(volatile uint64_t* p, uint64_t v) {
  *p = v;
  WcFlush();
}
[[gnu::noinline, gnu::used]] void onchip_probe_ordered_store(volatile uint64_t* p, uint64_t v) {
  *p = v;
  ToDeviceBarrier();
}
[[gnu::noinline, gnu::used]] void onchip_probe_bracketed_store(ProbeLock* lock,
                                                               volatile uint64_t* p, uint64_t v) {
  WcLockGuard guard(*lock);
  *p = v;
}
[[gnu::noinline, gnu::used]] uint64_t onchip_probe_guarded_load(const volatile uint64_t* flag,
                                                                const volatile uint64_t* data) {
  const uint64_t f = *flag;
  FromDeviceBarrier();
  return f + *data;
}
[[gnu::noinline, gnu::used]] uint64_t onchip_probe_dma_guarded_load(const volatile uint64_t* flag,
                                                                    const volatile uint64_t* data) {
  const uint64_t f = *flag;
  DmaReadBarrier();
  return f + *data;
}
}

const Function& Disassembled(const void* code, std::optional<Disassembly>* keep) {
  std::string error;
  *keep = Disassembly::Of(code, &error);
  EXPECT_TRUE(*keep) << error;
  static const Function empty;
  if (!*keep) return empty;
  const Function* fn = (*keep)->At(code);
  EXPECT_NE(fn, nullptr);
  return fn ? *fn : empty;
}

std::size_t Count(const Function& fn, const std::string& mnemonic) {
  std::size_t n = 0;
  for (const auto& i : fn.insns) n += i.mnemonic == mnemonic;
  return n;
}

TEST(Barriers, WcFlushIsAnSfenceAfterTheStore) {
  std::optional<Disassembly> d;
  const Function& fn =
      Disassembled(reinterpret_cast<const void*>(&onchip_probe_flushed_store), &d);
  std::string why;
  EXPECT_TRUE(EndsWithFenceAfterLastStore(*d, fn, "sfence", &why)) << why;
  volatile uint64_t word = 0;
  onchip_probe_flushed_store(&word, 7);
  EXPECT_EQ(word, 7u);
}

// A compiler barrier only: no fence instruction, so the fence check must reject the function
// (which also shows that the check can fail).
TEST(Barriers, ToDeviceBarrierCostsNoInstruction) {
  std::optional<Disassembly> d;
  const Function& fn =
      Disassembled(reinterpret_cast<const void*>(&onchip_probe_ordered_store), &d);
  EXPECT_EQ(Count(fn, "sfence") + Count(fn, "lfence") + Count(fn, "mfence"), 0u);
  std::string why;
  EXPECT_FALSE(EndsWithFenceAfterLastStore(*d, fn, "sfence", &why));
  EXPECT_NE(why.find("returns with a store"), std::string::npos) << why;
}

TEST(Barriers, FromDeviceBarrierIsAnLfenceBetweenTheLoads) {
  std::optional<Disassembly> d;
  const Function& fn = Disassembled(reinterpret_cast<const void*>(&onchip_probe_guarded_load), &d);
  EXPECT_EQ(Count(fn, "lfence"), 1u);
  // The lfence sits between the two loads of the argument pointers.
  std::size_t first_load = SIZE_MAX, fence = SIZE_MAX, second_load = SIZE_MAX;
  for (std::size_t i = 0; i < fn.insns.size(); ++i) {
    const auto& in = fn.insns[i];
    const bool loads = in.operands.find("(%rdi)") != std::string::npos ||
                       in.operands.find("(%rsi)") != std::string::npos;
    if (in.mnemonic == "lfence") fence = i;
    else if (loads && fence == SIZE_MAX && first_load == SIZE_MAX) first_load = i;
    else if (loads && fence != SIZE_MAX && second_load == SIZE_MAX) second_load = i;
  }
  EXPECT_LT(first_load, fence);
  EXPECT_LT(fence, second_load);
  const volatile uint64_t flag = 1, data = 2;
  EXPECT_EQ(onchip_probe_guarded_load(&flag, &data), 3u);
}

// A CQE read after its owner byte: the order of write-back loads, which x86-64 keeps, so no
// fence instruction (an LFENCE here cost about 7 ns per poll_cq).
TEST(Barriers, DmaReadBarrierCostsNoInstruction) {
  std::optional<Disassembly> d;
  const Function& fn =
      Disassembled(reinterpret_cast<const void*>(&onchip_probe_dma_guarded_load), &d);
  EXPECT_EQ(Count(fn, "sfence") + Count(fn, "lfence") + Count(fn, "mfence"), 0u);
  const volatile uint64_t flag = 1, data = 2;
  EXPECT_EQ(onchip_probe_dma_guarded_load(&flag, &data), 3u);
}

// The BlueFlame bracket in machine code: call lock, SFENCE, the store, SFENCE, call unlock.
TEST(WcLockGuard, FencesAfterLockAndBeforeUnlock) {
  std::optional<Disassembly> d;
  const Function& fn =
      Disassembled(reinterpret_cast<const void*>(&onchip_probe_bracketed_store), &d);
  std::string seq;
  for (const auto& in : fn.insns) {
    // A call, or the tail jump that ends the function.
    const bool calls = in.mnemonic.starts_with("call") || in.mnemonic == "jmp";
    if (calls && in.target_name.find("ProbeLock::lock") != std::string::npos)
      seq += "L";
    else if (calls && in.target_name.find("ProbeLock::unlock") != std::string::npos)
      seq += "U";
    else if (in.mnemonic == "sfence")
      seq += "F";
    else if (testing::IsStore(in))
      seq += "S";
  }
  // From the lock call to the unlock call (a sanitizer build adds its own bookkeeping stores
  // to the frame before and after the bracket).
  const auto lock_at = seq.find('L');
  const auto unlock_at = seq.find('U');
  ASSERT_NE(lock_at, std::string::npos) << seq;
  ASSERT_NE(unlock_at, std::string::npos) << seq;
  EXPECT_EQ(seq.substr(lock_at, unlock_at + 1 - lock_at), "LFSFU") << seq;
  ProbeLock lock;
  volatile uint64_t word = 0;
  onchip_probe_bracketed_store(&lock, &word, 9);
  EXPECT_EQ(word, 9u);
  EXPECT_EQ(lock.depth, 0);
}

}  // namespace
}  // namespace onchip::mmio
