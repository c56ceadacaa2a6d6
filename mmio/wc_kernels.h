// Internal to mmio/: the entry points of every copy variant, one family per ISA file.
// wc_copy.cc puts them in the variant tables; nothing else should call them directly.
#pragma once

#include <cstddef>

// Every entry point below starts a 64-byte line (ONCHIP_COPY_ENTRY on its definition): the short
// paths, the first few dozen bytes of a copy function, then lie in one line. That no branch
// crosses or ends on a 32-byte boundary, which Skylake-derived cores fetch slowly since the JCC
// erratum microcode (measured here: 0.6 ns of a 3 ns 4-byte copy, identical code otherwise), is
// the assembler's job (-mbranches-within-32B-boundaries, mmio/BUILD): alignment alone kept it
// only until the next change moved a branch.
#define ONCHIP_COPY_ENTRY __attribute__((aligned(64)))

namespace onchip::mmio::detail {

// wc_copy_base.cc: x86-64 baseline (SSE2), always available.
void ToDeviceMovq8(void* dst, const void* src, std::size_t len);
void LineMovq8(void* dst, const void* src);
void ToDeviceSse(void* dst, const void* src, std::size_t len);
void LineSse(void* dst, const void* src);
void ToDeviceNt(void* dst, const void* src, std::size_t len);
void LineNt(void* dst, const void* src);
void FromDeviceSse(void* dst, const void* src, std::size_t len);

// wc_copy_sse41.cc
void FromDeviceSse41Stream(void* dst, const void* src, std::size_t len);

// wc_copy_avx2.cc
void ToDeviceAvx2(void* dst, const void* src, std::size_t len);
void LineAvx2(void* dst, const void* src);
void FromDeviceAvx2Stream(void* dst, const void* src, std::size_t len);

// wc_copy_avx512.cc
void ToDeviceAvx512(void* dst, const void* src, std::size_t len);
void LineAvx512(void* dst, const void* src);
void FromDeviceAvx512Stream(void* dst, const void* src, std::size_t len);

// wc_copy_movdir64b.cc
void ToDeviceMovdir64b(void* dst, const void* src, std::size_t len);
void LineMovdir64b(void* dst, const void* src);

}  // namespace onchip::mmio::detail
