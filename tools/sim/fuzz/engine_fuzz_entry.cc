// The libFuzzer-style entry point the fuzzing loop (tools/fuzz/persistent_fuzz.cc) drives for the
// data engine.
#include <cstddef>
#include <cstdint>

#include "tools/sim/fuzz/engine_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  onchip::sim::fuzz::FuzzEngine(data, size);
  return 0;
}
