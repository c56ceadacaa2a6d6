// The x86-64 features the mmio copy kernels dispatch on, as CPUID reports them and as the OS has
// enabled their register state (XGETBV). Read once; cheap enough to call again.
#pragma once

namespace onchip::mmio {

struct CpuFeatures {
  bool sse41 = false;      // MOVNTDQA streaming loads (16 B)
  bool avx2 = false;       // 32-byte integer loads/stores, 32-byte streaming loads; YMM state on
  bool avx512f = false;    // 64-byte loads/stores; ZMM and opmask state enabled by the OS
  bool movdir64b = false;  // 64-byte direct store, written as one non-torn 64-byte write
  // The core executes a 512-bit store as two 256-bit halves (AMD family 19h: Zen 4, the only
  // core of that family with AVX-512), so one 64-byte store writes a line no better than two
  // 32-byte ones.
  bool split_512bit_stores = false;
};

CpuFeatures DetectCpuFeatures();

}  // namespace onchip::mmio
