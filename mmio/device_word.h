// A word in host memory that the device reads while the CPU writes it: a doorbell record's
// counters, a CQ's consumer index and arm word.
//
// The store is one untorn 32-bit store with release ordering: on x86-64 a plain MOV, as
// libmlx5's, so it costs nothing over `*word = value`. It still says what happens: the device
// (another thread, for the in-process software ConnectX) reads the word concurrently, and the
// release makes everything written before it (the WQEs a counter announces) visible to a reader
// that observes it, which the C++ memory model and ThreadSanitizer understand where a compiler
// barrier alone says nothing. The named barrier before it (mmio/barriers.h) stays: it states the
// ordering a real device's DMA needs.
#pragma once

#include <atomic>
#include <type_traits>

namespace onchip::mmio {

template <class W>
  requires(sizeof(W) == 4 && std::is_trivially_copyable_v<W>)
inline void StoreDeviceWord(W& word, W value) {
  std::atomic_ref<W>(word).store(value, std::memory_order_release);
}

}  // namespace onchip::mmio
