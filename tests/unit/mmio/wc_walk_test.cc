// The order of accesses every copy variant makes, observed through a recording kernel.
//
// All variants share detail::WalkToDevice / WalkFromDevice (mmio/wc_walk.h) and differ only in
// the full-line kernel, a fixed sequence of loads then stores (see the variant files). Recording
// the walk therefore shows, for every variant: stores strictly ascending, each inside one 64-byte
// line and naturally aligned, never narrower than 4 bytes under the device contract, all source
// loads of a line before its first store, and, when full lines were stored, the kernel's
// AfterLines() once, last (the fence of a variant whose line stores are weakly ordered).
// What software cannot observe: how the CPU's write-combining buffers turn these stores into
// PCIe TLPs (that needs a device; see mmio/README.md).
#include "mmio/wc_walk.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace onchip::mmio::detail {
namespace {

enum class Op { kLoad, kStore, kFence };
struct Event {
  Op op;
  std::uintptr_t addr;  // device-side address for device accesses, source address for loads
  std::size_t width;
  bool device;  // the access touches the device side
};
std::vector<Event> g_events;

struct RecordingToDevice {
  static void Line(char* dst, const char* src) {
    g_events.push_back({Op::kLoad, reinterpret_cast<std::uintptr_t>(src), 64, false});
    g_events.push_back({Op::kStore, reinterpret_cast<std::uintptr_t>(dst), 64, true});
    std::memcpy(dst, src, 64);
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (std::size_t off = 0; off < n; off += 64) Line(dst + off, src + off);
  }
  static void LoadSource(unsigned char* img, const char* src, std::size_t w) {
    g_events.push_back({Op::kLoad, reinterpret_cast<std::uintptr_t>(src), w, false});
    std::memcpy(img, src, w);
  }
  static void StoreDevice(char* dst, const unsigned char* img, std::size_t w) {
    g_events.push_back({Op::kStore, reinterpret_cast<std::uintptr_t>(dst), w, true});
    std::memcpy(dst, img, w);
  }
  template <std::size_t W>
  static Word<W> LoadSourceWord(const char* src) {
    Word<W> v;
    LoadSource(reinterpret_cast<unsigned char*>(&v), src, W);
    return v;
  }
  template <std::size_t W>
  static void StoreDeviceWord(char* dst, Word<W> v) {
    StoreDevice(dst, reinterpret_cast<const unsigned char*>(&v), W);
  }
  static void AfterLines() { g_events.push_back({Op::kFence, 0, 0, false}); }
};

struct RecordingFromDevice {
  static void Line(char* dst, const char* src) {
    g_events.push_back({Op::kLoad, reinterpret_cast<std::uintptr_t>(src), 64, true});
    g_events.push_back({Op::kStore, reinterpret_cast<std::uintptr_t>(dst), 64, false});
    std::memcpy(dst, src, 64);
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (std::size_t off = 0; off < n; off += 64) Line(dst + off, src + off);
  }
  static void LoadDevice(unsigned char* img, const char* src, std::size_t w) {
    g_events.push_back({Op::kLoad, reinterpret_cast<std::uintptr_t>(src), w, true});
    std::memcpy(img, src, w);
  }
  static void StoreHost(char* dst, const unsigned char* img, std::size_t w) {
    g_events.push_back({Op::kStore, reinterpret_cast<std::uintptr_t>(dst), w, false});
    std::memcpy(dst, img, w);
  }
  template <std::size_t W>
  static Word<W> LoadDeviceWord(const char* src) {
    Word<W> v;
    LoadDevice(reinterpret_cast<unsigned char*>(&v), src, W);
    return v;
  }
  template <std::size_t W>
  static void StoreHostWord(char* dst, Word<W> v) {
    StoreHost(dst, reinterpret_cast<const unsigned char*>(&v), W);
  }
};

std::uintptr_t LineOf(std::uintptr_t a) { return a & ~std::uintptr_t{63}; }

// Checks the device-side accesses of kind `op`: they tile [begin, begin+len) ascending, each
// naturally aligned and inside one line, none below `min_width`.
::testing::AssertionResult DeviceSideTiles(Op op, std::uintptr_t begin, std::size_t len,
                                           std::size_t min_width) {
  std::uintptr_t next = begin;
  for (const Event& e : g_events) {
    if (e.op != op || !e.device) continue;
    if (e.addr != next)
      return ::testing::AssertionFailure() << "access at +" << (e.addr - begin) << ", expected +"
                                           << (next - begin) << " (not ascending and contiguous)";
    if (e.addr % e.width != 0)
      return ::testing::AssertionFailure() << e.width << "-byte access misaligned at +" << (e.addr - begin);
    if (LineOf(e.addr) != LineOf(e.addr + e.width - 1))
      return ::testing::AssertionFailure() << "access crosses a line at +" << (e.addr - begin);
    if (e.width < min_width)
      return ::testing::AssertionFailure() << e.width << "-byte access at +" << (e.addr - begin);
    next += e.width;
  }
  if (next != begin + len) return ::testing::AssertionFailure() << "covered " << (next - begin) << " of " << len;
  return ::testing::AssertionSuccess();
}

TEST(WalkToDevice, StoresAscendLineByLineAfterTheirLoads) {
  alignas(64) static char dev[4096 + 256];
  static char src[4096 + 256];
  for (std::size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<char>(i * 13 + 1);
  for (std::size_t doff = 0; doff < 64; doff += 4)
    for (std::size_t len = 0; len <= 4096; len += (len < 300 ? 4 : 60)) {
      g_events.clear();
      std::memset(dev, 0, sizeof dev);
      char* d = dev + 64 + doff;
      const char* s = src + 3;
      WalkToDevice<RecordingToDevice>(d, s, len);
      ASSERT_EQ(std::memcmp(d, s, len), 0);
      ASSERT_TRUE(DeviceSideTiles(Op::kStore, reinterpret_cast<std::uintptr_t>(d), len, 4))
          << "doff " << doff << " len " << len;
      // AfterLines() once, as the last event, exactly when a full line was stored.
      bool lines = false;
      std::size_t fences = 0;
      for (const Event& e : g_events) {
        lines |= e.op == Op::kStore && e.width == 64;
        fences += e.op == Op::kFence;
      }
      EXPECT_EQ(fences, lines ? 1u : 0u) << "doff " << doff << " len " << len;
      if (lines) {
        EXPECT_EQ(g_events.back().op, Op::kFence);
      }
      // Per destination line: every load of its source bytes comes before its first store, and
      // no load happens between its first and last store.
      const auto dbase = reinterpret_cast<std::uintptr_t>(d);
      const auto sbase = reinterpret_cast<std::uintptr_t>(s);
      for (std::size_t i = 0; i < g_events.size(); ++i) {
        if (g_events[i].op != Op::kStore) continue;
        const std::uintptr_t line = LineOf(g_events[i].addr);
        for (std::size_t j = i + 1; j < g_events.size(); ++j) {
          const Event& e = g_events[j];
          if (e.op == Op::kLoad) {
            const std::uintptr_t dst_of_load = dbase + (e.addr - sbase);
            ASSERT_NE(LineOf(dst_of_load), line) << "a load for a line after one of its stores";
            // A later load belongs to a later line; the current line must then be finished.
            for (std::size_t k = j + 1; k < g_events.size(); ++k)
              ASSERT_FALSE(g_events[k].op == Op::kStore && LineOf(g_events[k].addr) == line)
                  << "a line's stores are interrupted by a load";
            break;
          }
        }
      }
    }
}

TEST(WalkToDevice, OutsideTheContractStillTilesExactly) {
  alignas(64) static char dev[512];
  static char src[512];
  for (std::size_t doff = 0; doff < 64; ++doff)
    for (std::size_t len = 0; len <= 200; ++len) {
      g_events.clear();
      char* d = dev + 64 + doff;
      WalkToDevice<RecordingToDevice>(d, src, len);
      ASSERT_TRUE(DeviceSideTiles(Op::kStore, reinterpret_cast<std::uintptr_t>(d), len, 1));
    }
}

TEST(WalkFromDevice, LoadsAscendAndAreNeverNarrowerThanFourBytes) {
  alignas(64) static char dev[4096 + 256];
  static char host[4096 + 256];
  for (std::size_t i = 0; i < sizeof dev; ++i) dev[i] = static_cast<char>(i * 11 + 5);
  for (std::size_t soff = 0; soff < 64; soff += 4)
    for (std::size_t len = 0; len <= 4096; len += (len < 300 ? 4 : 60)) {
      g_events.clear();
      const char* s = dev + 64 + soff;
      WalkFromDevice<RecordingFromDevice>(host + 1, s, len);
      ASSERT_EQ(std::memcmp(host + 1, s, len), 0);
      ASSERT_TRUE(DeviceSideTiles(Op::kLoad, reinterpret_cast<std::uintptr_t>(s), len, 4))
          << "soff " << soff << " len " << len;
    }
}

// Reads from a device are not combined: each load is its own read request on a real BAR. Under
// the contract every load below a line is therefore the widest piece that is naturally aligned
// and fits (PieceWidth), e.g. 16 bytes from a 16-byte aligned address is one load, not four.
TEST(WalkFromDevice, EveryPieceIsTheWidestThatFits) {
  alignas(64) static char dev[4096 + 256];
  static char host[4096 + 256];
  for (std::size_t soff = 0; soff < 64; soff += 4)
    for (std::size_t len = 0; len <= 300; len += 4) {
      g_events.clear();
      const char* s = dev + 64 + soff;
      WalkFromDevice<RecordingFromDevice>(host + 1, s, len);
      std::size_t loads = 0;
      for (const Event& e : g_events) {
        if (e.op != Op::kLoad || e.width == 64) continue;
        const auto off = e.addr - reinterpret_cast<std::uintptr_t>(s);
        ++loads;
        ASSERT_EQ(e.width, PieceWidth(e.addr, len - off)) << "soff " << soff << " len " << len << " at +" << off;
      }
      if (len < 64 && soff % 16 == 0) {
        EXPECT_EQ(loads, len / 16 + ((len & 8) != 0) + ((len & 4) != 0)) << "soff " << soff << " len " << len;
      }
    }
}

TEST(PieceWidth, WidestAlignedPieceThatFits) {
  EXPECT_EQ(PieceWidth(0x1000, 64), 16u);
  EXPECT_EQ(PieceWidth(0x1004, 64), 4u);
  EXPECT_EQ(PieceWidth(0x1008, 64), 8u);
  EXPECT_EQ(PieceWidth(0x1010, 12), 8u);
  EXPECT_EQ(PieceWidth(0x1010, 4), 4u);
  EXPECT_EQ(PieceWidth(0x1003, 64), 1u);
  EXPECT_EQ(PieceWidth(0x1002, 1), 1u);
}

}  // namespace
}  // namespace onchip::mmio::detail
