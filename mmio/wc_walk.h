// Internal to mmio/: the one walk every copy variant shares, parameterised by its line kernel.
//
// A kernel type K provides, as static members:
//   Line(char* dst, const char* src)     one full 64-byte line (the aligned side is the device)
//   Lines(char* dst, const char* src, n) n/64 lines ascending with Line, with K's target
//                                        attribute so that Line inlines into it
//   LoadPiece / StorePiece               exact-width accesses for partial lines (defaults below)
//   AfterLines()                         (to-device) what must follow K's line stores before the
//                                        copy returns: WcFlush when they are weakly ordered on
//                                        every memory type (MOVNTDQ, MOVDIR64B), else nothing
// Keeping the walk in one template means the order that tests observe through a recording
// kernel (tests/unit/mmio/wc_walk_test.cc) is the order every real variant executes.
#pragma once

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace onchip::mmio::detail {

inline constexpr std::size_t kLine = 64;

inline void CompilerBarrier() { asm volatile("" ::: "memory"); }

// Width of the next piece at `addr` with `rem` bytes left: the widest of 16, 8, 4, 2, 1 that is
// naturally aligned there and fits. With addr and rem multiples of 4 it is never below 4.
inline std::size_t PieceWidth(std::uintptr_t addr, std::size_t rem) {
  std::size_t w = (addr & 15) != 0 ? (addr & (~addr + 1)) : 16;  // alignment of addr, up to 16
  while (w > rem) w >>= 1;                                        // halving keeps it aligned
  return w;
}

// Host-side access of w bytes at any alignment (compiles to one move per width).
inline void HostCopy(void* to, const void* from, std::size_t w) {
  switch (w) {
    case 16: std::memcpy(to, from, 16); break;
    case 8: std::memcpy(to, from, 8); break;
    case 4: std::memcpy(to, from, 4); break;
    case 2: std::memcpy(to, from, 2); break;
    default: std::memcpy(to, from, 1); break;
  }
}

// Device-side store of exactly w bytes at a w-aligned address: one instruction of that width.
// volatile keeps the compiler from merging, splitting or dropping it.
inline void DeviceStore(char* dst, const unsigned char* from, std::size_t w) {
  switch (w) {
    case 16: {
      __m128i v;
      std::memcpy(&v, from, 16);
      *reinterpret_cast<volatile __m128i*>(dst) = v;
      break;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, from, 8);
      *reinterpret_cast<volatile uint64_t*>(dst) = v;
      break;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, from, 4);
      *reinterpret_cast<volatile uint32_t*>(dst) = v;
      break;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, from, 2);
      *reinterpret_cast<volatile uint16_t*>(dst) = v;
      break;
    }
    default:
      *reinterpret_cast<volatile unsigned char*>(dst) = *from;
      break;
  }
}

// Device-side load of exactly w bytes at a w-aligned address.
inline void DeviceLoad(unsigned char* to, const char* src, std::size_t w) {
  switch (w) {
    case 16: {
      const __m128i v = *reinterpret_cast<const volatile __m128i*>(src);
      std::memcpy(to, &v, 16);
      break;
    }
    case 8: {
      const uint64_t v = *reinterpret_cast<const volatile uint64_t*>(src);
      std::memcpy(to, &v, 8);
      break;
    }
    case 4: {
      const uint32_t v = *reinterpret_cast<const volatile uint32_t*>(src);
      std::memcpy(to, &v, 4);
      break;
    }
    case 2: {
      const uint16_t v = *reinterpret_cast<const volatile uint16_t*>(src);
      std::memcpy(to, &v, 2);
      break;
    }
    default:
      *to = *reinterpret_cast<const volatile unsigned char*>(src);
      break;
  }
}

// The register that carries a piece of W bytes (4, 8 or 16) of a short copy.
template <std::size_t W>
struct WordOf;
template <>
struct WordOf<4> {
  using type = uint32_t;
};
template <>
struct WordOf<8> {
  using type = uint64_t;
};
template <>
struct WordOf<16> {
  using type = __m128i;
};
template <std::size_t W>
using Word = typename WordOf<W>::type;

// Default partial-line accesses; a recording kernel overrides them. The *Word forms move one
// piece by value, so a short copy's pieces live in registers and never in a stack buffer.
struct PieceDefaults {
  static void LoadSource(unsigned char* img, const char* src, std::size_t w) { HostCopy(img, src, w); }
  static void StoreDevice(char* dst, const unsigned char* img, std::size_t w) { DeviceStore(dst, img, w); }
  static void LoadDevice(unsigned char* img, const char* src, std::size_t w) { DeviceLoad(img, src, w); }
  static void StoreHost(char* dst, const unsigned char* img, std::size_t w) { HostCopy(dst, img, w); }

  template <std::size_t W>
  [[gnu::always_inline]] static Word<W> LoadSourceWord(const char* src) {
    Word<W> v;
    std::memcpy(&v, src, W);
    return v;
  }
  template <std::size_t W>
  [[gnu::always_inline]] static void StoreDeviceWord(char* dst, Word<W> v) {
    *reinterpret_cast<volatile Word<W>*>(dst) = v;
  }
  template <std::size_t W>
  [[gnu::always_inline]] static Word<W> LoadDeviceWord(const char* src) {
    if constexpr (W == 4) {
      // WalkFromDevice takes 4 bytes without testing the address: under the contract it is
      // 4-byte aligned and this is the same MOV; outside it (host memory) still exact, not UB.
      typedef uint32_t __attribute__((aligned(1))) AnyAlignment;
      return *reinterpret_cast<const volatile AnyAlignment*>(src);
    } else {
      return *reinterpret_cast<const volatile Word<W>*>(src);
    }
  }
  template <std::size_t W>
  [[gnu::always_inline]] static void StoreHostWord(char* dst, Word<W> v) {
    std::memcpy(dst, &v, W);
  }
};

inline bool ShortUnderContract(std::uintptr_t device_addr, std::size_t n) {
  return n < kLine && ((device_addr | n) & 3) == 0;
}

// A copy shorter than a line under the device contract (a sequence number, an order field),
// with `device_addr` the device side's address: the pieces PieceWidth would choose, ascending,
// worked out without a loop (a 4-byte piece up to the first 8-byte boundary, an 8-byte one up to
// the first 16-byte boundary, up to three 16-byte pieces, then an 8- and a 4-byte piece). Each
// piece is one fixed-width move held in a named register, never a stack buffer, so the copy is
// a few inlined moves. Ops::Load<W>(src) returns a piece, Ops::Store<W>(dst, piece) puts it;
// every load happens before the first store.
// Up to 16 bytes to a 4-byte aligned device address: 4-byte pieces, fewer tests than working
// out wider ones (the write-combining buffer joins them all the same), and few enough registers
// that the caller needs no stack frame. Writes only: reads are not combined, so WalkFromDevice
// uses the widest pieces instead. Returns false, having done nothing, unless n is 0, 4, 8,
// 12 or 16. 4 and 8 bytes (a flag, a sequence number) are tested first and alone: at these
// sizes each test and taken branch costs as much as a store. The barriers between stores keep
// the pieces from being merged into a vector built with inserts, which stalls the next copy's
// loads when the two buffers share page offsets (4 KiB aliasing).
template <class Ops>
[[gnu::always_inline]] inline bool TinyCopy(char* dst, const char* src, std::size_t n) {
  if (n == 4) [[likely]] {
    const Word<4> w0 = Ops::template Load<4>(src);
    CompilerBarrier();
    Ops::template Store<4>(dst, w0);
    return true;
  }
  if (n == 8) [[likely]] {
    const Word<4> w0 = Ops::template Load<4>(src);
    const Word<4> w1 = Ops::template Load<4>(src + 4);
    CompilerBarrier();
    Ops::template Store<4>(dst, w0);
    CompilerBarrier();
    Ops::template Store<4>(dst + 4, w1);
    return true;
  }
  if (n > 16 || (n & 3) != 0) return false;
  if (n < 12) return true;  // 0
  const Word<4> w0 = Ops::template Load<4>(src);
  const Word<4> w1 = Ops::template Load<4>(src + 4);
  const Word<4> w2 = Ops::template Load<4>(src + 8);
  Word<4> w3{};
  if (n == 16) w3 = Ops::template Load<4>(src + 12);
  CompilerBarrier();
  Ops::template Store<4>(dst, w0);
  CompilerBarrier();
  Ops::template Store<4>(dst + 4, w1);
  CompilerBarrier();
  Ops::template Store<4>(dst + 8, w2);
  CompilerBarrier();
  if (n == 16) Ops::template Store<4>(dst + 12, w3);
  return true;
}

// 17 to 63 bytes from a 16-byte aligned device address (most device-memory offsets): 16-byte
// pieces, then an 8- and a 4-byte one, each decided by one test of n; few enough registers
// that the caller needs no stack frame.
template <class Ops>
[[gnu::always_inline]] inline void Aligned16Copy(char* dst, const char* src, std::size_t n) {
  const std::size_t at8 = n & ~std::size_t{15}, at4 = n - 4;
  Word<16> b0{}, b1{}, b2{};
  Word<8> t8{};
  Word<4> t4{};
  b0 = Ops::template Load<16>(src);
  if (n >= 32) b1 = Ops::template Load<16>(src + 16);
  if (n >= 48) b2 = Ops::template Load<16>(src + 32);
  if (n & 8) t8 = Ops::template Load<8>(src + at8);
  if (n & 4) t4 = Ops::template Load<4>(src + at4);
  CompilerBarrier();
  Ops::template Store<16>(dst, b0);
  if (n >= 32) Ops::template Store<16>(dst + 16, b1);
  if (n >= 48) Ops::template Store<16>(dst + 32, b2);
  if (n & 8) Ops::template Store<8>(dst + at8, t8);
  if (n & 4) Ops::template Store<4>(dst + at4, t4);
}

// Exactly N bytes (a multiple of 4 below a line) from a 16-byte aligned device address: the
// pieces PieceWidth chooses there (16-byte ones, then an 8- and a 4-byte one), fixed at compile
// time, so the copy is straight-line code: all loads, then all stores, no test of n.
template <class Ops, std::size_t N>
[[gnu::always_inline]] inline void FixedAligned16Copy(char* dst, const char* src) {
  static_assert(N < kLine && N % 4 == 0);
  constexpr std::size_t bodies = N / 16, at8 = 16 * bodies, at4 = at8 + (N & 8);
  Word<16> b0{}, b1{}, b2{};
  Word<8> t8{};
  Word<4> t4{};
  if constexpr (bodies > 0) b0 = Ops::template Load<16>(src);
  if constexpr (bodies > 1) b1 = Ops::template Load<16>(src + 16);
  if constexpr (bodies > 2) b2 = Ops::template Load<16>(src + 32);
  if constexpr ((N & 8) != 0) t8 = Ops::template Load<8>(src + at8);
  if constexpr ((N & 4) != 0) t4 = Ops::template Load<4>(src + at4);
  CompilerBarrier();
  if constexpr (bodies > 0) Ops::template Store<16>(dst, b0);
  if constexpr (bodies > 1) Ops::template Store<16>(dst + 16, b1);
  if constexpr (bodies > 2) Ops::template Store<16>(dst + 32, b2);
  if constexpr ((N & 8) != 0) Ops::template Store<8>(dst + at8, t8);
  if constexpr ((N & 4) != 0) Ops::template Store<4>(dst + at4, t4);
}

// B (0, 16, 32 or 48) plus the last 0 to 12 bytes of n: two tests, each leaf straight-line.
template <class Ops, std::size_t B>
[[gnu::always_inline]] inline void Aligned16CopyFrom(char* dst, const char* src, std::size_t n) {
  if (n & 8) {
    if (n & 4) return FixedAligned16Copy<Ops, B + 12>(dst, src);
    return FixedAligned16Copy<Ops, B + 8>(dst, src);
  }
  if (n & 4) return FixedAligned16Copy<Ops, B + 4>(dst, src);
  return FixedAligned16Copy<Ops, B>(dst, src);
}

// n < 64, n % 4 == 0, from a 16-byte aligned device address (most device-memory offsets): four
// tests on the bits of n pick the straight-line copy of that length. Aligned16Copy (still the
// to-device path) tests n once per piece to load and again to store: nine taken branches at 32
// bytes. Taken branches, not loads, are what this core pays for at these sizes, up to about 1 ns
// each when the machine is busy, and the vendor's loop pays one per 4 bytes. A jump table on n
// does the same in one indirect jump, but measured slower here when the machine is busy.
template <class Ops>
[[gnu::always_inline]] inline void Aligned16CopyByLength(char* dst, const char* src, std::size_t n) {
  if (n & 32) {
    if (n & 16) return Aligned16CopyFrom<Ops, 48>(dst, src, n);
    return Aligned16CopyFrom<Ops, 32>(dst, src, n);
  }
  if (n & 16) return Aligned16CopyFrom<Ops, 16>(dst, src, n);
  return Aligned16CopyFrom<Ops, 0>(dst, src, n);
}

template <class Ops>
[[gnu::always_inline]] inline void ShortCopy(char* dst, const char* src, std::uintptr_t device_addr,
                                             std::size_t n) {
  const bool lead4 = (device_addr & 4) != 0 && n >= 4;
  const std::size_t at8 = lead4 ? 4 : 0;
  const bool lead8 = ((device_addr + at8) & 8) != 0 && n - at8 >= 8;
  const std::size_t at16 = at8 + (lead8 ? 8 : 0);
  const std::size_t bodies = (n - at16) / 16;  // 0..3
  const std::size_t end16 = at16 + 16 * bodies;
  const bool tail8 = n - end16 >= 8;
  const std::size_t at4 = end16 + (tail8 ? 8 : 0);
  const bool tail4 = n - at4 >= 4;
  Word<4> l4{}, t4{};
  Word<8> l8{}, t8{};
  Word<16> b0{}, b1{}, b2{};
  if (lead4) l4 = Ops::template Load<4>(src);
  if (lead8) l8 = Ops::template Load<8>(src + at8);
  if (bodies > 0) b0 = Ops::template Load<16>(src + at16);
  if (bodies > 1) b1 = Ops::template Load<16>(src + at16 + 16);
  if (bodies > 2) b2 = Ops::template Load<16>(src + at16 + 32);
  if (tail8) t8 = Ops::template Load<8>(src + end16);
  if (tail4) t4 = Ops::template Load<4>(src + at4);
  CompilerBarrier();
  if (lead4) Ops::template Store<4>(dst, l4);
  if (lead8) Ops::template Store<8>(dst + at8, l8);
  if (bodies > 0) Ops::template Store<16>(dst + at16, b0);
  if (bodies > 1) Ops::template Store<16>(dst + at16 + 16, b1);
  if (bodies > 2) Ops::template Store<16>(dst + at16 + 32, b2);
  if (tail8) Ops::template Store<8>(dst + end16, t8);
  if (tail4) Ops::template Store<4>(dst + at4, t4);
}

template <class K>
struct ShortToDeviceOps {
  template <std::size_t W>
  [[gnu::always_inline]] static Word<W> Load(const char* src) { return K::template LoadSourceWord<W>(src); }
  template <std::size_t W>
  [[gnu::always_inline]] static void Store(char* dst, Word<W> v) { K::template StoreDeviceWord<W>(dst, v); }
};

template <class K>
struct ShortFromDeviceOps {
  template <std::size_t W>
  [[gnu::always_inline]] static Word<W> Load(const char* src) { return K::template LoadDeviceWord<W>(src); }
  template <std::size_t W>
  [[gnu::always_inline]] static void Store(char* dst, Word<W> v) { K::template StoreHostWord<W>(dst, v); }
};

// 17 to 63 bytes to or from the device: out of line, so that its registers cost the tiny and
// whole-line paths nothing.
template <class K>
[[gnu::noinline]] void ShortToDevice(char* dst, const char* src, std::size_t n) {
  ShortCopy<ShortToDeviceOps<K>>(dst, src, reinterpret_cast<std::uintptr_t>(dst), n);
}

template <class K>
[[gnu::noinline]] void ShortFromDevice(char* dst, const char* src, std::size_t n) {
  ShortCopy<ShortFromDeviceOps<K>>(dst, src, reinterpret_cast<std::uintptr_t>(src), n);
}

// [dst, dst+n) lies inside one line, n < 64. All source loads happen before the first store.
// Out of line (and baseline ISA): it needs a stack buffer.
template <class K>
[[gnu::noinline]] void PartialLineToDevice(char* dst, const char* src, std::size_t n) {
  alignas(16) unsigned char img[kLine];
  for (std::size_t off = 0, w; off < n; off += w) {
    w = PieceWidth(reinterpret_cast<std::uintptr_t>(dst + off), n - off);
    K::LoadSource(img + off, src + off, w);
  }
  CompilerBarrier();
  for (std::size_t off = 0, w; off < n; off += w) {
    w = PieceWidth(reinterpret_cast<std::uintptr_t>(dst + off), n - off);
    K::StoreDevice(dst + off, img + off, w);
  }
}

template <class K>
[[gnu::noinline]] void PartialLineFromDevice(char* dst, const char* src, std::size_t n) {
  alignas(16) unsigned char img[kLine];
  for (std::size_t off = 0, w; off < n; off += w) {
    w = PieceWidth(reinterpret_cast<std::uintptr_t>(src + off), n - off);
    K::LoadDevice(img + off, src + off, w);
  }
  for (std::size_t off = 0, w; off < n; off += w) {
    w = PieceWidth(reinterpret_cast<std::uintptr_t>(src + off), n - off);
    K::StoreHost(dst + off, img + off, w);
  }
}

// Head (up to the first line boundary of dst), full lines ascending, tail; then K::AfterLines()
// if any full line was stored. Out of line and baseline ISA; full lines go through K::Lines,
// which carries K's ISA.
template <class K>
[[gnu::noinline]] void WalkToDeviceUnaligned(char* dst, const char* src, std::size_t len) {
  std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(dst) & (kLine - 1))) & (kLine - 1);
  if (head > len) head = len;
  if (head != 0) {
    PartialLineToDevice<K>(dst, src, head);
    dst += head, src += head, len -= head;
  }
  const std::size_t body = len & ~(kLine - 1);
  if (body != 0) {
    K::Lines(dst, src, body);
    dst += body, src += body, len -= body;
  }
  if (len != 0) PartialLineToDevice<K>(dst, src, len);
  if (body != 0) K::AfterLines();
}

// The whole copy. A destination that is line-aligned with a length in whole lines (every
// BlueFlame-sized copy, most MEMIC copies) takes the direct path: inlined lines, no stack frame;
// a copy of at most 16 bytes under the device contract is up to four inlined moves, one up to a
// line from a 16-byte aligned address up to five, any other shorter than a line a few moves out
// of line (ShortCopy). Pieces are ordinary stores, so only a copy that stored full lines ends
// with K::AfterLines().
template <class K>
inline void WalkToDevice(void* dst_v, const void* src_v, std::size_t len) {
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  const auto addr = reinterpret_cast<std::uintptr_t>(dst);
  if ((addr & 3) == 0 && TinyCopy<ShortToDeviceOps<K>>(dst, src, len)) [[likely]]
    return;
  if (((addr | len) & (kLine - 1)) == 0) [[likely]] {
    if (len == 0) return;
    K::Lines(dst, src, len);
    K::AfterLines();
    return;
  }
  if (ShortUnderContract(addr, len)) {
    if ((addr & 15) == 0) {
      Aligned16Copy<ShortToDeviceOps<K>>(dst, src, len);
      return;
    }
    ShortToDevice<K>(dst, src, len);
    return;
  }
  WalkToDeviceUnaligned<K>(dst, src, len);
}

// Head (up to the first line boundary of src), full lines ascending, tail. Out of line and
// baseline ISA, so that the short copies' caller needs no stack frame; full lines go
// through K::Lines, which carries K's ISA.
template <class K>
[[gnu::noinline]] void WalkFromDeviceLong(char* dst, const char* src, std::size_t len) {
  std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(src) & (kLine - 1))) & (kLine - 1);
  if (head > len) head = len;
  if (head != 0) {
    PartialLineFromDevice<K>(dst, src, head);
    dst += head, src += head, len -= head;
  }
  if (const std::size_t body = len & ~(kLine - 1); body != 0) {
    K::Lines(dst, src, body);
    dst += body, src += body, len -= body;
  }
  if (len != 0) PartialLineFromDevice<K>(dst, src, len);
}

// Same walk with the device on the source side. Reads from a device are not combined the way
// writes are (on a real BAR each load is its own read request, and a round trip), so every piece
// is the widest that is naturally aligned and fits (PieceWidth), never several 4-byte loads where
// one wider load would do. Taken branches, not loads, are what small reads cost on this core
// (the vendor's loop pays one per 4 bytes), so the common cases come first and fall through:
// 4 bytes (a flag, a sequence number), then 8 and 16 from an address of that alignment, each
// one test and one load; then any other copy shorter than a line from a 16-byte aligned address
// (Aligned16CopyByLength); whole lines from a line-aligned address, the line kernel inlined;
// other copies shorter than a line under the contract, a few moves out of line (ShortCopy);
// anything else WalkFromDeviceLong.
template <class K>
inline void WalkFromDevice(void* dst_v, const void* src_v, std::size_t len) {
  using Ops = ShortFromDeviceOps<K>;
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  const auto addr = reinterpret_cast<std::uintptr_t>(src);
  if (len == 4) [[likely]] {  // any src: testing its alignment too cost 4 bytes 0.6 ns
    Ops::template Store<4>(dst, Ops::template Load<4>(src));
    return;
  }
  // One branch per test: written with &&, GCC moved these copies out of line behind a second
  // taken branch.
  if (((addr & 7) | (len ^ 8)) == 0) [[likely]] {
    Ops::template Store<8>(dst, Ops::template Load<8>(src));
    return;
  }
  if (((addr & 15) | (len ^ 16)) == 0) [[likely]] {
    Ops::template Store<16>(dst, Ops::template Load<16>(src));
    return;
  }
  if (((addr & 15) | (len & ~std::size_t{kLine - 4})) == 0) [[likely]] {  // len < 64, len % 4 == 0
    Aligned16CopyByLength<Ops>(dst, src, len);
    return;
  }
  if (((addr | len) & (kLine - 1)) == 0) [[likely]] {  // len != 0: 0 was handled above
    K::Lines(dst, src, len);
    return;
  }
  if (ShortUnderContract(addr, len)) {
    ShortFromDevice<K>(dst, src, len);
    return;
  }
  WalkFromDeviceLong<K>(dst, src, len);
}

}  // namespace onchip::mmio::detail
