// SSE4.1 kernels: MOVNTDQA streaming loads for reading device memory. Every function that uses
// SSE4.1 carries the target attribute itself; the file is compiled for the x86-64 baseline.
#include <immintrin.h>

#include "mmio/wc_kernels.h"
#include "mmio/wc_walk.h"

namespace onchip::mmio::detail {
namespace {

// On WC memory a streaming load fills a whole line into a streaming buffer with one read
// request; the next three loads of the line hit it. On WB memory it is an ordinary load.
struct Sse41StreamRead : PieceDefaults {
  __attribute__((target("sse4.1"))) static void Line(char* dst, const char* src) {
    __m128i* s = reinterpret_cast<__m128i*>(const_cast<char*>(src));
    const __m128i a = _mm_stream_load_si128(s + 0);
    const __m128i b = _mm_stream_load_si128(s + 1);
    const __m128i c = _mm_stream_load_si128(s + 2);
    const __m128i d = _mm_stream_load_si128(s + 3);
    __m128i* t = reinterpret_cast<__m128i*>(dst);
    _mm_storeu_si128(t + 0, a);
    _mm_storeu_si128(t + 1, b);
    _mm_storeu_si128(t + 2, c);
    _mm_storeu_si128(t + 3, d);
  }
  __attribute__((target("sse4.1"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
};

}  // namespace

ONCHIP_COPY_ENTRY __attribute__((target("sse4.1"), flatten)) void FromDeviceSse41Stream(void* dst, const void* src,
                                                                      std::size_t len) {
  WalkFromDevice<Sse41StreamRead>(dst, src, len);
}

}  // namespace onchip::mmio::detail
