// Internal to mmio/: the one walk every copy variant shares, parameterised by its line kernel.
//
// A kernel type K provides, as static members:
//   Line(char* dst, const char* src)     one full 64-byte line (the aligned side is the device)
//   Lines(char* dst, const char* src, n) n/64 lines ascending with Line (to-device only), with
//                                        K's target attribute so that Line inlines into it
//   LoadPiece / StorePiece               exact-width accesses for partial lines (defaults below)
//   End()                                what ends the copy (WcFlush for to-device, nothing else)
// Keeping the walk in one template means the order that tests observe through a recording
// kernel (tests/unit/mmio/wc_walk_test.cc) is the order every real variant executes.
#pragma once

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

// Default partial-line accesses; a recording kernel overrides them.
struct PieceDefaults {
  static void LoadSource(unsigned char* img, const char* src, std::size_t w) { HostCopy(img, src, w); }
  static void StoreDevice(char* dst, const unsigned char* img, std::size_t w) { DeviceStore(dst, img, w); }
  static void LoadDevice(unsigned char* img, const char* src, std::size_t w) { DeviceLoad(img, src, w); }
  static void StoreHost(char* dst, const unsigned char* img, std::size_t w) { HostCopy(dst, img, w); }
};

// The pieces of a partial line [addr, addr+n) (inside one line, n < 64) when addr and n are
// multiples of 4, the MEMIC contract: ascending and naturally aligned, with the widths PieceWidth
// would choose, but worked out without a loop so each access is one fixed-width move. A 4-byte
// piece up to the first 8-byte boundary, an 8-byte one up to the first 16-byte boundary, whole
// 16-byte pieces, then an 8- and a 4-byte piece for what is left.
struct PiecePlan {
  bool lead4, lead8, tail8, tail4;
  std::size_t at8, at16, end16, at4;  // offsets from addr

  static PiecePlan Of(std::uintptr_t addr, std::size_t n) {
    PiecePlan p;
    p.lead4 = (addr & 4) != 0 && n >= 4;
    p.at8 = p.lead4 ? 4 : 0;
    p.lead8 = ((addr + p.at8) & 8) != 0 && n - p.at8 >= 8;
    p.at16 = p.at8 + (p.lead8 ? 8 : 0);
    p.end16 = p.at16 + ((n - p.at16) & ~std::size_t{15});
    p.tail8 = n - p.end16 >= 8;
    p.at4 = p.end16 + (p.tail8 ? 8 : 0);
    p.tail4 = n - p.at4 >= 4;
    return p;
  }

  // Calls piece(offset, width) for every piece, ascending. Always inlined, so the widths are
  // constants where the accesses are emitted.
  template <class F>
  [[gnu::always_inline]] void ForEach(F&& piece) const {
    if (lead4) piece(std::size_t{0}, std::integral_constant<std::size_t, 4>{});
    if (lead8) piece(at8, std::integral_constant<std::size_t, 8>{});
    for (std::size_t off = at16; off != end16; off += 16) piece(off, std::integral_constant<std::size_t, 16>{});
    if (tail8) piece(end16, std::integral_constant<std::size_t, 8>{});
    if (tail4) piece(at4, std::integral_constant<std::size_t, 4>{});
  }
};

inline bool FourByteContract(std::uintptr_t device_addr, std::size_t n) {
  return ((device_addr | n) & 3) == 0;
}

// [dst, dst+n) lies inside one line, n < 64. All source loads happen before the first store.
// Under the 4-byte contract the pieces are fixed-width moves inlined into the caller; outside it
// (host-memory uses, 1- and 2-byte pieces) the general loop runs out of line.
template <class K>
[[gnu::noinline]] void PartialLineToDeviceAnyWidth(char* dst, const char* src, std::size_t n) {
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

// A partial line that starts 16-byte aligned (small copies to an aligned DM offset, the common
// case): up to three 16-byte pieces, then an 8- and a 4-byte one, each decided by one test of n.
template <class K>
[[gnu::always_inline]] inline void AlignedPartialLineToDevice(char* dst, const char* src, std::size_t n) {
  using W4 = std::integral_constant<std::size_t, 4>;
  using W8 = std::integral_constant<std::size_t, 8>;
  using W16 = std::integral_constant<std::size_t, 16>;
  const std::size_t at8 = n & ~std::size_t{15}, at4 = n - 4;
  alignas(16) unsigned char img[kLine]{};
  if (n >= 16) K::LoadSource(img, src, W16{});
  if (n >= 32) K::LoadSource(img + 16, src + 16, W16{});
  if (n >= 48) K::LoadSource(img + 32, src + 32, W16{});
  if (n & 8) K::LoadSource(img + at8, src + at8, W8{});
  if (n & 4) K::LoadSource(img + at4, src + at4, W4{});
  CompilerBarrier();
  if (n >= 16) K::StoreDevice(dst, img, W16{});
  if (n >= 32) K::StoreDevice(dst + 16, img + 16, W16{});
  if (n >= 48) K::StoreDevice(dst + 32, img + 32, W16{});
  if (n & 8) K::StoreDevice(dst + at8, img + at8, W8{});
  if (n & 4) K::StoreDevice(dst + at4, img + at4, W4{});
}

template <class K>
[[gnu::always_inline]] inline void PartialLineToDevice(char* dst, const char* src, std::size_t n) {
  const auto addr = reinterpret_cast<std::uintptr_t>(dst);
  if (!FourByteContract(addr, n)) [[unlikely]] {
    PartialLineToDeviceAnyWidth<K>(dst, src, n);
    return;
  }
  if ((addr & 15) == 0) {
    AlignedPartialLineToDevice<K>(dst, src, n);
    return;
  }
  // The image of the pieces, in registers (each piece has its own slot, so the compiler keeps
  // them there rather than on the stack).
  alignas(16) unsigned char lead4[4]{}, lead8[8]{}, body[48]{}, tail8[8]{}, tail4[4]{};
  const PiecePlan plan = PiecePlan::Of(addr, n);
  if (plan.lead4) K::LoadSource(lead4, src, std::integral_constant<std::size_t, 4>{});
  if (plan.lead8) K::LoadSource(lead8, src + plan.at8, std::integral_constant<std::size_t, 8>{});
  for (std::size_t off = plan.at16; off != plan.end16; off += 16)
    K::LoadSource(body + (off - plan.at16), src + off, std::integral_constant<std::size_t, 16>{});
  if (plan.tail8) K::LoadSource(tail8, src + plan.end16, std::integral_constant<std::size_t, 8>{});
  if (plan.tail4) K::LoadSource(tail4, src + plan.at4, std::integral_constant<std::size_t, 4>{});
  CompilerBarrier();
  if (plan.lead4) K::StoreDevice(dst, lead4, std::integral_constant<std::size_t, 4>{});
  if (plan.lead8) K::StoreDevice(dst + plan.at8, lead8, std::integral_constant<std::size_t, 8>{});
  for (std::size_t off = plan.at16; off != plan.end16; off += 16)
    K::StoreDevice(dst + off, body + (off - plan.at16), std::integral_constant<std::size_t, 16>{});
  if (plan.tail8) K::StoreDevice(dst + plan.end16, tail8, std::integral_constant<std::size_t, 8>{});
  if (plan.tail4) K::StoreDevice(dst + plan.at4, tail4, std::integral_constant<std::size_t, 4>{});
}

template <class K>
[[gnu::noinline]] void PartialLineFromDeviceAnyWidth(char* dst, const char* src, std::size_t n) {
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

template <class K>
[[gnu::always_inline]] inline void PartialLineFromDevice(char* dst, const char* src, std::size_t n) {
  const auto addr = reinterpret_cast<std::uintptr_t>(src);
  if (!FourByteContract(addr, n)) [[unlikely]] {
    PartialLineFromDeviceAnyWidth<K>(dst, src, n);
    return;
  }
  alignas(16) unsigned char img[kLine];
  const PiecePlan plan = PiecePlan::Of(addr, n);
  plan.ForEach([&](std::size_t off, auto w) { K::LoadDevice(img + off, src + off, w); });
  plan.ForEach([&](std::size_t off, auto w) { K::StoreHost(dst + off, img + off, w); });
}

// Head (up to the first line boundary of dst), full lines ascending, tail; then K::End().
// Out of line and baseline ISA; full lines go through K::Lines, which carries K's ISA.
template <class K>
[[gnu::noinline]] void WalkToDeviceUnaligned(char* dst, const char* src, std::size_t len) {
  std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(dst) & (kLine - 1))) & (kLine - 1);
  if (head > len) head = len;
  if (head != 0) {
    PartialLineToDevice<K>(dst, src, head);
    dst += head, src += head, len -= head;
  }
  if (const std::size_t body = len & ~(kLine - 1); body != 0) {
    K::Lines(dst, src, body);
    dst += body, src += body, len -= body;
  }
  if (len != 0) PartialLineToDevice<K>(dst, src, len);
  K::End();
}

// The whole copy. A destination that is line-aligned with a length in whole lines (every
// BlueFlame-sized copy, most MEMIC copies) takes the short path: inlined lines, no stack frame.
template <class K>
[[gnu::always_inline]] inline void WalkToDevice(void* dst_v, const void* src_v, std::size_t len) {
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  if (((reinterpret_cast<std::uintptr_t>(dst) | len) & (kLine - 1)) == 0) [[likely]] {
    K::Lines(dst, src, len);
    K::End();
    return;
  }
  // Small copies inside one line (sequence numbers, order fields): the pieces inline, no frame.
  if (len < kLine && (reinterpret_cast<std::uintptr_t>(dst) & (kLine - 1)) + len <= kLine &&
      FourByteContract(reinterpret_cast<std::uintptr_t>(dst), len)) {
    PartialLineToDevice<K>(dst, src, len);
    K::End();
    return;
  }
  WalkToDeviceUnaligned<K>(dst, src, len);
}

// Same walk with the device on the source side.
template <class K>
inline void WalkFromDevice(void* dst_v, const void* src_v, std::size_t len) {
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  std::size_t head = (kLine - (reinterpret_cast<std::uintptr_t>(src) & (kLine - 1))) & (kLine - 1);
  if (head > len) head = len;
  if (head != 0) {
    PartialLineFromDevice<K>(dst, src, head);
    dst += head, src += head, len -= head;
  }
  for (; len >= kLine; dst += kLine, src += kLine, len -= kLine) K::Line(dst, src);
  if (len != 0) PartialLineFromDevice<K>(dst, src, len);
  K::End();
}

}  // namespace onchip::mmio::detail
