// Barriers named by purpose, for a CPU talking to a PCIe device (x86-64).
//
// What the device can observe are PCIe transactions: memory-read requests it issues against host
// memory (DMA) and memory-write TLPs the CPU posts into its BARs. Each barrier below is defined by
// what it guarantees about those transactions, then by the instruction it costs on x86-64.
//
// x86-64 facts these rest on (Intel SDM vol. 3 ch. 8.2 and 11.3):
//  - Stores to write-back (WB) memory become globally visible in program order (TSO), and DMA
//    reads snoop the caches; loads are not reordered with older loads.
//  - Stores to write-combining (WC) memory (a BlueFlame register or device memory mapped WC),
//    non-temporal stores and MOVDIR64B are weakly ordered: they sit in fill buffers, may combine
//    into one write TLP (at most one 64-byte aligned line each), may leave as several partial
//    TLPs, and lines may leave in any order. SFENCE is the order point: every WC / non-temporal /
//    direct store before it is posted before any store after it becomes visible.
//  - PCIe keeps posted writes from one requester in order (no relaxed-ordering on CPU writes),
//    so "posted before" on the CPU side means "arrives before" at the device.
//  - Loads from WC memory and MOVNTDQA streaming loads are weakly ordered; LFENCE orders them.
#pragma once

#include <immintrin.h>

#include <utility>

namespace onchip::mmio {

// Before a store that tells the device to read host memory (a doorbell record, an owner bit,
// a descriptor index): every earlier store to host memory is visible to the device's DMA reads
// no later than that store. x86-64: a compiler barrier. TSO already keeps WB stores in order and
// DMA snoops; the only thing to prevent is the compiler sinking a WQE store below the doorbell
// record store. (rdma-core udma_to_device_barrier, Linux dma_wmb.)
inline void ToDeviceBarrier() { asm volatile("" ::: "memory"); }

// After a load that observed a device's DMA write to host memory (a CQE's or EQE's owner byte,
// a command entry's ownership bit) and before loads of the structure it hands over: the later
// loads do not return values older than the first. The device's posted writes land in host
// memory in order and are snooped into the caches, so what is left is the load-load order of
// write-back memory, which x86-64 keeps (TSO): a compiler barrier. (Linux dma_rmb and DPDK's
// rte_io_rmb on x86; rdma-core's udma_from_device_barrier pays an LFENCE, about 7 ns per poll
// here, for the device-memory case below.)
inline void DmaReadBarrier() { asm volatile("" ::: "memory"); }

// After a load from device memory (a flag the device writes in MEMIC, read through the BAR) and
// before later loads: they do not pass it. x86-64: LFENCE. Loads from write-combining memory
// and MOVNTDQA streaming loads, which onchip's from-device copies use, are weakly ordered.
inline void FromDeviceBarrier() { _mm_lfence(); }

// Before the first store of a write-combined sequence (a BlueFlame copy, a doorbell): every
// earlier store (WB doorbell record, the previous WC sequence, an earlier device-memory copy) is
// posted before any store of the new sequence, so the device sees the doorbell record before the BlueFlame write and two
// sequences never share a TLP. x86-64: SFENCE. (rdma-core mmio_wc_start.)
inline void WcStart() { _mm_sfence(); }

// After the last store of a write-combined sequence: the fill buffers holding it are posted now
// and before any later store (including the release of a lock protecting a shared BlueFlame
// register, which another core would otherwise race into the same buffer). x86-64: SFENCE.
// (rdma-core mmio_flush_writes.) Also what orders a device-memory copy (wc_copy.h) against a
// store that is not a doorbell.
inline void WcFlush() { _mm_sfence(); }

// After a doorbell store and before loading a word the device writes to say whether it is
// watching (the software ConnectX's engine sleep word, uapi/vpci.h): the doorbell is globally
// visible before the load reads, so either the device sees the doorbell or this load sees that
// it sleeps. (The pattern of io_uring's SQPOLL wake-up check.) x86-64: the one reordering TSO
// allows is a later load passing an earlier store, and any locked instruction forbids it for
// write-back memory, which is where both words live. A locked OR of zero into the top of the
// stack (its value unchanged) costs about half an MFENCE here (7 against 15 ns after the
// doorbell's SFENCE); MFENCE would also order non-temporal and write-combined stores, which
// the doorbell's WcFlush already did.
inline void DoorbellBeforeSleepCheckBarrier() {
  asm volatile("lock orl $0, (%%rsp)" ::: "memory", "cc");
}

// Scoped ownership of a shared BlueFlame register: lock, then WcStart; on scope exit WcFlush,
// then unlock, so the copy is posted completely before another thread can start writing the
// same register. `Lock` is any BasicLockable (std::mutex, a spinlock). Not movable: it is a
// scope, not a handle.
template <class Lock>
class [[nodiscard]] WcLockGuard {
 public:
  explicit WcLockGuard(Lock& lock) : lock_(lock) {
    lock_.lock();
    WcStart();
  }
  ~WcLockGuard() {
    WcFlush();
    lock_.unlock();
  }
  WcLockGuard(const WcLockGuard&) = delete;
  WcLockGuard& operator=(const WcLockGuard&) = delete;

 private:
  Lock& lock_;
};

}  // namespace onchip::mmio
