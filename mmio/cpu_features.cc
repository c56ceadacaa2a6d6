#include "mmio/cpu_features.h"

#include <cpuid.h>

#include <cstdint>

namespace onchip::mmio {
namespace {

// XCR0: which register state the OS saves on context switch.
uint64_t ReadXcr0() {
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

}  // namespace

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse41 = (c & bit_SSE4_1) != 0;
  const bool osxsave = (c & bit_OSXSAVE) != 0;
  const uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;     // SSE + AVX state
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;   // + opmask, ZMM_Hi256, Hi16_ZMM
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm_state && (b & bit_AVX2) != 0;
  f.avx512f = zmm_state && (b & bit_AVX512F) != 0;
  f.movdir64b = (c & (1u << 28)) != 0;  // CPUID.(EAX=7,ECX=0):ECX[28]
  return f;
}

}  // namespace onchip::mmio
