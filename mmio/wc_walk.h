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
inline void WalkToDevice(void* dst_v, const void* src_v, std::size_t len) {
  char* dst = static_cast<char*>(dst_v);
  const char* src = static_cast<const char*>(src_v);
  if (((reinterpret_cast<std::uintptr_t>(dst) | len) & (kLine - 1)) == 0) [[likely]] {
    K::Lines(dst, src, len);
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
