// The libFuzzer-style entry point tools/fuzz/persistent_fuzz.cc drives.
#include <cstddef>
#include <cstdint>

#include "tools/simd/fuzz/protocol_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  onchip::simd::fuzz::FuzzProtocol(data, size);
  return 0;
}
