#include "mmio/cpu_features.h"

#include <cpuid.h>

#include <cstdint>
#include <cstring>

namespace onchip::mmio {
namespace {

// XCR0: which register state the OS saves on context switch.
uint64_t ReadXcr0() {
  uint32_t lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

// The CPU family of an AMD processor (CPUID leaf 1: base family, plus the extended family when
// the base is 0xF), or 0 for any other vendor.
unsigned AmdFamily() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
  char vendor[12];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (std::memcmp(vendor, "AuthenticAMD", sizeof vendor) != 0) return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const unsigned base = (a >> 8) & 0xf;
  return base == 0xf ? base + ((a >> 20) & 0xff) : base;
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
  f.split_512bit_stores = f.avx512f && AmdFamily() == 0x19;
  return f;
}

}  // namespace onchip::mmio
