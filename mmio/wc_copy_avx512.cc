// AVX-512 kernels: one 64-byte store per line (the whole line in one instruction, the best a
// plain store can do for a whole-line TLP short of MOVDIR64B); 64-byte streaming loads. Every
// function that uses AVX-512 carries the target attribute; the file stays x86-64 baseline.
#include <immintrin.h>

#include "mmio/wc_kernels.h"
#include "mmio/wc_walk.h"

namespace onchip::mmio::detail {
namespace {

struct Avx512 : PieceDefaults {
  __attribute__((target("avx512f"))) static void Line(char* dst, const char* src) {
    const __m512i a = _mm512_loadu_si512(src);
    _mm512_store_si512(dst, a);
  }
  __attribute__((target("avx512f"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() {}
};

struct Avx512StreamRead : PieceDefaults {
  __attribute__((target("avx512f"))) static void Line(char* dst, const char* src) {
    const __m512i a = _mm512_stream_load_si512(const_cast<char*>(src));
    _mm512_storeu_si512(dst, a);
  }
  __attribute__((target("avx512f"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
};

}  // namespace

ONCHIP_COPY_ENTRY __attribute__((target("avx512f"), flatten)) void ToDeviceAvx512(void* dst, const void* src,
                                                                std::size_t len) {
  WalkToDevice<Avx512>(dst, src, len);
}
// The BlueFlame line: 16-byte loads (see BlueFlameCopy64) joined in two steps, then one 64-byte
// store.
ONCHIP_COPY_ENTRY __attribute__((target("avx512f"))) void LineAvx512(void* dst, const void* src) {
  const auto* s = static_cast<const __m128i*>(src);
  const __m256i lo = _mm256_set_m128i(_mm_loadu_si128(s + 1), _mm_loadu_si128(s));
  const __m256i hi = _mm256_set_m128i(_mm_loadu_si128(s + 3), _mm_loadu_si128(s + 2));
  // The masked form: GCC 12's plain _mm512_inserti64x4 reads an undefined vector (-Wuninitialized).
  const __m512i low = _mm512_castsi256_si512(lo);
  _mm512_store_si512(dst, _mm512_mask_inserti64x4(low, 0xff, low, hi, 1));
}
ONCHIP_COPY_ENTRY __attribute__((target("avx512f"), flatten)) void FromDeviceAvx512Stream(void* dst, const void* src,
                                                                       std::size_t len) {
  WalkFromDevice<Avx512StreamRead>(dst, src, len);
}

}  // namespace onchip::mmio::detail
