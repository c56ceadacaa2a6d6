// The software ConnectX's IOMMU: the only way the device reaches host memory.
//
// The driver maps DMA regions (IOVA -> host memory); the device reaches a bus address range only
// if the whole range lies inside one mapping. Anything else (unmapped, straddling two mappings,
// wrapping) fails and the caller fails the command or the work request; nothing outside the
// mappings is ever touched.
//
// Two kinds of mapping:
//   - pointer memory (Map): the memory is in this process (the in-process device, or memory a
//     device daemon mapped from the client's fd). The device may hold a pointer into it.
//   - process memory (MapProcess): anonymous memory of another process (or of this one, by pid)
//     that this process cannot map. The device reaches it only by copying, through the
//     process's /proc/PID/mem (process_memory.h), the debugger's mechanism. The kernel checks
//     ptrace access (same uid and dumpable, or CAP_SYS_PTRACE; with Yama ptrace_scope 1 also an
//     ancestor or PR_SET_PTRACER) when MapProcess opens it, so a refusal is a map-time error.
//     Transfers are not atomic beyond what the kernel's copy gives; a short transfer, a
//     read-only page or a target that has exited is a failed access, which the caller turns
//     into the PRM's error. The file names the address space, not the pid: once the process
//     has exited its pid (which the kernel may give to a new process) reaches nothing.
// Translate gives pointers for pointer memory only; Read, Write, WriteHandover, LoadAcquire32 and
// Update64 work on both kinds, so every device access goes through them or falls back to them.
//
// Concurrency: mappings change while commands run. A device thread that touches host memory does
// so inside an Access (a shared lock); UnmapDma takes the lock exclusively, so when it returns no
// Access that could see the old mapping is alive ("the device stops using the memory before this
// returns"). An Access must not be held across a wait that needs the driver to progress.
//
// Owners: every mapping records the uid of the context it was mapped for (0: the function's own,
// the driver that brought it up; a device daemon maps each client's memory under the client's
// uid). Commands of a user context may name only memory mapped for that uid (IsMappedFor), as
// the kernel lets a DEVX command name only umems of its own uid (drivers/infiniband/hw/mlx5/
// devx.c, devx_umem_get).
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <vector>

#include "tools/sim/process_memory.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::sim {

class Iommu {
 public:
  Iommu() = default;
  Iommu(const Iommu&) = delete;
  Iommu& operator=(const Iommu&) = delete;
  ~Iommu();

  // EINVAL: not 4 KiB aligned, zero length, null host, wrapping, or overlapping a mapping.
  // `uid` is the context the memory is mapped for (see Owners above).
  Result<void> Map(const vpci::DmaRegion& region, uint16_t uid = 0);
  // [iova, iova + length) reaches [remote_address, + length) in process `pid` (a pid in this
  // process's PID namespace). Same EINVAL rules as Map (remote_address must be 4 KiB aligned and
  // non-zero). EPERM when the kernel refuses ptrace access to pid, ESRCH when no such process,
  // EFAULT when a page of the range is not mapped or not readable there (ProcessMemory::Open).
  Result<void> MapProcess(uint64_t iova, uint64_t length, pid_t pid, uint64_t remote_address,
                          uint16_t uid = 0);
  // The same in the address space `file` reaches (a client's own handles, ProcessFile::Adopt):
  // no pid is looked up and no privilege of this process is used.
  Result<void> MapProcess(uint64_t iova, uint64_t length, std::shared_ptr<const ProcessFile> file,
                          uint64_t remote_address, uint16_t uid = 0);
  // ENOENT: no mapping starts at iova with exactly that length.
  Result<void> Unmap(uint64_t iova, uint64_t length);

  std::size_t mapping_count() const;

  // A translation its user keeps from one Access to the next (a queue's doorbell record, which
  // the engine reads every pass): the host pointer of one range of pointer memory, good until a
  // mapping is removed. Every Unmap moves the IOMMU's generation on, so a translation made before
  // it is looked up again; a Map cannot change what an existing translation reaches (mappings
  // never overlap). Process memory has no pointer and is never remembered.
  struct CachedTranslation {
    uint64_t iova = 0;
    uint64_t len = 0;
    uint64_t generation = 0;  // the IOMMU's generation when it was made; 0: none
    std::byte* host = nullptr;
  };

  // A window of translations and transfers valid while it lives. Re-entrant on one thread: an
  // Access made while this thread already holds one on the same IOMMU takes no lock of its own,
  // so the device thread opens one for a whole engine pass and the accesses inside it cost no
  // atomic operation (the IOMMU's shared lock is never taken twice by one thread).
  class Access final {
   public:
    explicit Access(const Iommu& iommu);
    // The same window if it can be had without waiting (an Unmap holds the lock): held() says.
    Access(const Iommu& iommu, std::try_to_lock_t);
    ~Access();
    bool held() const { return held_; }
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;
    // Host pointer for [iova, iova + len) if one pointer mapping covers it, else nullptr (also
    // for process memory: use the copying calls below).
    std::byte* Translate(uint64_t iova, uint64_t len) const;
    // Translate through `cache`: the lookup runs only when the range is not the one remembered or
    // a mapping went away since.
    [[gnu::always_inline]] std::byte* Translate(uint64_t iova, uint64_t len,
                                                CachedTranslation& cache) const {
      if (cache.generation == iommu_.generation_.load(std::memory_order_relaxed) &&
          cache.iova == iova && cache.len == len)
        return cache.host;
      return TranslateAndRemember(iova, len, cache);
    }
    // True if one mapping of either kind covers [iova, iova + len).
    bool Mapped(uint64_t iova, uint64_t len) const;
    // Whole transfers only: false if the range is not wholly inside one mapping or the target
    // process gave less than everything (exited, unmapped its memory, read-only pages).
    bool Read(uint64_t iova, std::span<std::byte> out) const;
    // Read's bytes appended to `out`, which grows by `len` (and is left as it was on failure).
    // From pointer memory the bytes are copied in once, with no zero-filled growth first.
    bool Append(uint64_t iova, uint64_t len, std::vector<std::byte>& out) const;
    bool Write(uint64_t iova, std::span<const std::byte> in) const;
    // Writes `in` with its last byte stored last, as a release store: the handover of a
    // structure whose last byte holds an ownership bit (CQE, EQE, cmdq entry). For process
    // memory the last byte is a second write issued after the first has completed.
    bool WriteHandover(uint64_t iova, std::span<const std::byte> in) const;
    // A 4-byte aligned load with acquire order (doorbell records), the word as it lies in
    // memory (no byte swap). For process memory a 4-byte
    // copy: an aligned word is not split by the kernel's copy in practice, but nothing promises it.
    std::optional<uint32_t> LoadAcquire32(uint64_t iova) const;
    // The same load, its translation remembered in `cache` (pointer memory only).
    [[gnu::always_inline]] std::optional<uint32_t> LoadAcquire32(uint64_t iova,
                                                                 CachedTranslation& cache) const {
      std::byte* p = iova % 4 == 0 ? Translate(iova, 4, cache) : nullptr;
      if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 4 != 0) return LoadAcquire32(iova);
      return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p)).load(std::memory_order_acquire);
    }
    // Replaces the 8-byte aligned word w with next(w) atomically and returns w. On pointer memory
    // a compare-and-swap loop: atomic with respect to the CPU too. On process memory a read and a
    // write under one lock shared by every device in this process: atomic with respect to other
    // device accesses made through Update64, not with respect to the target's CPU stores (the
    // atomicity ConnectX promises for RDMA atomics, IBV_ATOMIC_HCA).
    template <class F>
    std::optional<uint64_t> Update64(uint64_t iova, F&& next) const;

   private:
    std::byte* TranslateAndRemember(uint64_t iova, uint64_t len, CachedTranslation& cache) const;

    const Iommu& iommu_;
    const Iommu* outer_;  // the IOMMU this thread held before, restored at destruction
    bool owns_lock_;
    bool held_ = true;
  };

  // Through a short-lived Access; false if the range is not wholly mapped or not transferred.
  bool Read(uint64_t iova, std::span<std::byte> out) const;
  bool Write(uint64_t iova, std::span<const std::byte> in) const;
  // True if [iova, iova + len) lies inside one mapping (of either kind).
  bool IsMapped(uint64_t iova, uint64_t len) const;
  // True if [iova, iova + len) is wholly mapped for `uid`: by one mapping or by mappings that
  // follow each other with no gap, every one of them mapped for `uid`.
  bool IsMappedFor(uint16_t uid, uint64_t iova, uint64_t len) const;

  // Stores `in` at `p` (pointer memory) with its last byte last, as a release store: what
  // Access::WriteHandover does once it has the pointer.
  static void StoreHandover(std::byte* p, std::span<const std::byte> in);

  // The compare-and-swap loop Update64 runs on a pointer (8-byte aligned, else nullopt).
  template <class F>
  static std::optional<uint64_t> UpdateWord64(std::byte* p, F&& next);

 private:
  struct Mapping {
    uint64_t length;
    std::byte* host;                       // pointer memory, or nullptr for process memory
    std::optional<ProcessMemory> process;  // process memory
    uint16_t uid = 0;                      // the context it is mapped for
  };
  // The mapping and the offset in it that cover [iova, iova + len), or nullptr.
  const Mapping* FindLocked(uint64_t iova, uint64_t len, uint64_t* offset) const;
  // IsMappedFor's walk, inside an Access.
  bool RunMappedForLocked(uint16_t uid, uint64_t iova, uint64_t len) const;
  Result<void> Insert(uint64_t iova, Mapping m);
  // The /proc/PID/mem that pid's mappings share, opened anew when none is held or the held one
  // no longer reaches `address` in pid.
  Result<std::shared_ptr<const ProcessFile>> FileOf(pid_t pid, uint64_t address);
  static std::mutex& ProcessAtomicMutex();

  mutable std::shared_mutex mutex_;
  std::map<uint64_t, Mapping> mappings_;  // by iova
  std::mutex files_mutex_;                // process_files_
  // The file each process's mappings share, while some mapping holds it.
  std::map<pid_t, std::weak_ptr<const ProcessFile>> process_files_;
  // Moves on with every Unmap, under the exclusive lock: a CachedTranslation made at another
  // generation may name memory that is gone. Read inside an Access (the shared lock), so relaxed.
  std::atomic<uint64_t> generation_{1};
  // The IOTLB: the mapping a 4 KiB page of IOVA was last found in, direct-mapped by page
  // number. The device polls words in several mappings every pass (each queue's doorbell
  // record, each CQ's), so one remembered mapping would be evicted on every lookup. Entries
  // are hints, checked against the lookup like the tree's answer; nodes change only under the
  // exclusive lock, and Unmap clears every entry naming the node it erases.
  using Node = std::pair<const uint64_t, Mapping>;
  static constexpr std::size_t kIotlbEntries = 64;
  mutable std::array<std::atomic<const Node*>, kIotlbEntries> iotlb_{};
};

template <class F>
std::optional<uint64_t> Iommu::UpdateWord64(std::byte* p, F&& next) {
  if (p == nullptr || reinterpret_cast<uintptr_t>(p) % 8 != 0) return std::nullopt;
  std::atomic_ref<uint64_t> word(*reinterpret_cast<uint64_t*>(p));
  uint64_t found = word.load(std::memory_order_seq_cst);
  while (!word.compare_exchange_weak(found, next(found), std::memory_order_seq_cst)) {
  }
  return found;
}

template <class F>
std::optional<uint64_t> Iommu::Access::Update64(uint64_t iova, F&& next) const {
  if (iova % 8 != 0) return std::nullopt;
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, 8, &offset);
  if (m == nullptr) return std::nullopt;
  if (m->host != nullptr) return UpdateWord64(m->host + offset, next);
  std::lock_guard atomic_lock(ProcessAtomicMutex());
  uint64_t found = 0;
  if (!m->process->Read(offset, std::as_writable_bytes(std::span(&found, 1)))) return std::nullopt;
  const uint64_t value = next(found);
  if (value != found &&
      !m->process->Write(offset, std::as_bytes(std::span(&value, 1))))
    return std::nullopt;
  return found;
}

}  // namespace onchip::sim
