// MOVDIR64B kernels: each line is one 64-byte direct store, read from the source and written to
// the device by a single instruction; the SDM guarantees the 64-byte write is not torn, so on
// PCIe it is one 64-byte TLP. Direct stores are weakly ordered even on write-back memory, so a
// copy that stored lines ends with one SFENCE (the pieces of a partial line are plain stores). The file stays x86-64 baseline; only these functions carry the target attribute.
#include <immintrin.h>

#include "mmio/barriers.h"
#include "mmio/wc_kernels.h"
#include "mmio/wc_walk.h"

namespace onchip::mmio::detail {
namespace {

struct Movdir64b : PieceDefaults {
  __attribute__((target("movdir64b"))) static void Line(char* dst, const char* src) {
    _movdir64b(dst, src);
  }
  __attribute__((target("movdir64b"))) static void Lines(char* dst, const char* src, std::size_t n) {
    for (const char* end = src + n; src != end; dst += kLine, src += kLine) Line(dst, src);
  }
  static void AfterLines() { WcFlush(); }  // direct stores are weakly ordered on any memory
};

}  // namespace

ONCHIP_COPY_ENTRY __attribute__((target("movdir64b"), flatten)) void ToDeviceMovdir64b(void* dst, const void* src,
                                                                     std::size_t len) {
  WalkToDevice<Movdir64b>(dst, src, len);
}
ONCHIP_COPY_ENTRY __attribute__((target("movdir64b"))) void LineMovdir64b(void* dst, const void* src) {
  Movdir64b::Line(static_cast<char*>(dst), static_cast<const char*>(src));
}

}  // namespace onchip::mmio::detail
