// The libFuzzer-style entry point the fuzzing loop drives (tools/fuzz/persistent_fuzz.cc).
#include <cstddef>
#include <cstdint>

#include "tools/sim/fuzz/firmware_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  onchip::sim::fuzz::FuzzFirmware(data, size);
  return 0;
}
