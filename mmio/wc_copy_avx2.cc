// AVX2 kernels: two 32-byte stores per line; 32-byte streaming loads. Every function that uses
// AVX2 carries the target attribute itself; the file is compiled for the x86-64 baseline.
#include <immintrin.h>

#include "mmio/wc_kernels.h"
#include "mmio/wc_walk.h"

namespace onchip::mmio::detail {
namespace {

struct Avx2 : PieceDefaults {
  __attribute__((target("avx2"))) static void Line(char* dst, const char* src) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    volatile __m256i* t = reinterpret_cast<volatile __m256i*>(dst);
    t[0] = a;
    t[1] = b;
  }
  __attribute__((target("avx2"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() {}
};

struct Avx2StreamRead : PieceDefaults {
  __attribute__((target("avx2"))) static void Line(char* dst, const char* src) {
    const __m256i* s = reinterpret_cast<const __m256i*>(src);
    const __m256i a = _mm256_stream_load_si256(s + 0);
    const __m256i b = _mm256_stream_load_si256(s + 1);
    __m256i* t = reinterpret_cast<__m256i*>(dst);
    _mm256_storeu_si256(t + 0, a);
    _mm256_storeu_si256(t + 1, b);
  }
  __attribute__((target("avx2"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
};

}  // namespace

ONCHIP_COPY_ENTRY __attribute__((target("avx2"), flatten)) void ToDeviceAvx2(void* dst, const void* src,
                                                           std::size_t len) {
  WalkToDevice<Avx2>(dst, src, len);
}
// The BlueFlame line: 16-byte loads (see BlueFlameCopy64), two 32-byte stores.
ONCHIP_COPY_ENTRY __attribute__((target("avx2"))) void LineAvx2(void* dst, const void* src) {
  const auto* s = static_cast<const __m128i*>(src);
  const __m256i a = _mm256_set_m128i(_mm_loadu_si128(s + 1), _mm_loadu_si128(s));
  const __m256i b = _mm256_set_m128i(_mm_loadu_si128(s + 3), _mm_loadu_si128(s + 2));
  volatile __m256i* t = static_cast<volatile __m256i*>(dst);
  t[0] = a;
  t[1] = b;
}
ONCHIP_COPY_ENTRY __attribute__((target("avx2"), flatten)) void FromDeviceAvx2Stream(void* dst, const void* src,
                                                                   std::size_t len) {
  WalkFromDevice<Avx2StreamRead>(dst, src, len);
}

}  // namespace onchip::mmio::detail
