// The libFuzzer-style entry point AFL++ drives for the data engine (with
// uapi/cmdq/fuzz/afl_main.cc as main()).
#include <cstddef>
#include <cstdint>

#include "tools/sim/fuzz/engine_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  onchip::sim::fuzz::FuzzEngine(data, size);
  return 0;
}
