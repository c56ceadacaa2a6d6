// Copy kernels that need nothing beyond the x86-64 baseline (SSE2).
#include <emmintrin.h>

#include <cstdint>

#include "mmio/barriers.h"
#include "mmio/wc_kernels.h"
#include "mmio/wc_walk.h"

namespace onchip::mmio::detail {
namespace {

// The vendor's BlueFlame line (rdma-core mmio_memcpy_x64 on x86-64): eight 8-byte MOVs, except
// that all eight loads come first. Written in asm so the widths and order are exactly these.
struct Movq8 : PieceDefaults {
  static void Line(char* dst, const char* src) {
    uint64_t a, b, c, d, e, f, g, h;
    asm volatile(
        "movq 0(%[s]), %[a]\n\t"
        "movq 8(%[s]), %[b]\n\t"
        "movq 16(%[s]), %[c]\n\t"
        "movq 24(%[s]), %[d]\n\t"
        "movq 32(%[s]), %[e]\n\t"
        "movq 40(%[s]), %[f]\n\t"
        "movq 48(%[s]), %[g]\n\t"
        "movq 56(%[s]), %[h]\n\t"
        "movq %[a], 0(%[t])\n\t"
        "movq %[b], 8(%[t])\n\t"
        "movq %[c], 16(%[t])\n\t"
        "movq %[d], 24(%[t])\n\t"
        "movq %[e], 32(%[t])\n\t"
        "movq %[f], 40(%[t])\n\t"
        "movq %[g], 48(%[t])\n\t"
        "movq %[h], 56(%[t])"
        : [a] "=&r"(a), [b] "=&r"(b), [c] "=&r"(c), [d] "=&r"(d), [e] "=&r"(e), [f] "=&r"(f),
          [g] "=&r"(g), [h] "=&r"(h)
        : [s] "r"(src), [t] "r"(dst)
        : "memory");
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() {}
};

// UCX's BlueFlame line: four 16-byte loads, then four aligned 16-byte stores.
struct Sse : PieceDefaults {
  static void Line(char* dst, const char* src) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    volatile __m128i* t = reinterpret_cast<volatile __m128i*>(dst);
    t[0] = a;
    t[1] = b;
    t[2] = c;
    t[3] = d;
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() {}
};

// Non-temporal (MOVNTDQ) stores: on WC memory they behave like WC stores; on host memory they
// bypass the caches. Weakly ordered even on write-back memory, hence the SFENCE after a copy's
// lines: it keeps the promise every variant makes (ordered like plain stores to that memory).
struct Nt : PieceDefaults {
  static void Line(char* dst, const char* src) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    CompilerBarrier();
    __m128i* t = reinterpret_cast<__m128i*>(dst);
    _mm_stream_si128(t + 0, a);
    CompilerBarrier();
    _mm_stream_si128(t + 1, b);
    CompilerBarrier();
    _mm_stream_si128(t + 2, c);
    CompilerBarrier();
    _mm_stream_si128(t + 3, d);
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() { WcFlush(); }  // non-temporal stores are weakly ordered on any memory
};

// Reads: four aligned 16-byte loads of the device line, then four stores to host memory.
struct SseRead : PieceDefaults {
  static void Line(char* dst, const char* src) {
    const volatile __m128i* s = reinterpret_cast<const volatile __m128i*>(src);
    const __m128i a = s[0];
    const __m128i b = s[1];
    const __m128i c = s[2];
    const __m128i d = s[3];
    __m128i* t = reinterpret_cast<__m128i*>(dst);
    _mm_storeu_si128(t + 0, a);
    _mm_storeu_si128(t + 1, b);
    _mm_storeu_si128(t + 2, c);
    _mm_storeu_si128(t + 3, d);
  }
  static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
};

}  // namespace

ONCHIP_COPY_ENTRY void ToDeviceMovq8(void* dst, const void* src, std::size_t len) { WalkToDevice<Movq8>(dst, src, len); }
ONCHIP_COPY_ENTRY void LineMovq8(void* dst, const void* src) {
  Movq8::Line(static_cast<char*>(dst), static_cast<const char*>(src));
}
ONCHIP_COPY_ENTRY void ToDeviceSse(void* dst, const void* src, std::size_t len) { WalkToDevice<Sse>(dst, src, len); }
ONCHIP_COPY_ENTRY void LineSse(void* dst, const void* src) {
  Sse::Line(static_cast<char*>(dst), static_cast<const char*>(src));
}
ONCHIP_COPY_ENTRY void ToDeviceNt(void* dst, const void* src, std::size_t len) { WalkToDevice<Nt>(dst, src, len); }
ONCHIP_COPY_ENTRY void LineNt(void* dst, const void* src) {
  Nt::Line(static_cast<char*>(dst), static_cast<const char*>(src));
}
ONCHIP_COPY_ENTRY void FromDeviceSse(void* dst, const void* src, std::size_t len) {
  WalkFromDevice<SseRead>(dst, src, len);
}

}  // namespace onchip::mmio::detail
