// A word in host memory that the device reads while the CPU writes it (a doorbell record's
// counters, a CQ's consumer index and arm word), or that the device writes while the CPU polls
// it (a CQE's or EQE's ownership byte).
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

// The poller's side: one untorn load with acquire ordering of a byte the device writes last to
// hand a structure over (the CQE's op_own). x86-64: a plain MOV, as libmlx5's volatile read; the
// acquire makes the structure's other bytes, written before the handover, visible to the loads
// after it, in the C++ memory model and to ThreadSanitizer (the in-process device is a thread).
// The named DmaReadBarrier after it states the order a real device's DMA needs.
template <class W>
  requires(sizeof(W) <= 8 && std::is_trivially_copyable_v<W>)
inline W LoadDeviceWord(const W& word) {
  return std::atomic_ref<W>(const_cast<W&>(word)).load(std::memory_order_acquire);
}

}  // namespace onchip::mmio
