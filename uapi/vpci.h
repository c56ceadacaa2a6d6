// The virtual PCI function: the neutral contract between a bus driver and a software device.
//
// A real ConnectX is reached through BAR0 (MMIO) and DMA through the IOMMU. The software
// ConnectX (tools/sim) offers the same two things and nothing else:
//   - BAR0 as shared memory: a file descriptor (memfd) and a size, mapped MAP_SHARED by the
//     driver at offset 0 and by the device;
//   - an IOMMU channel: the driver maps DMA regions (IOVA -> memory) and the device reads and
//     writes host memory only through those mappings, bounds-checked;
//   - what config space would say about PCIe TLP Processing Hints: where the function's TPH
//     steering-tag table is (tph());
//   - a doorbell kick: shared memory cannot trap a store, so after a doorbell write (cmd_dbell,
//     UAR doorbells, BlueFlame) the sim bus wakes a device that said it sleeps (the sleep word
//     below, Kick()) and the device looks at once. Without the kick the device still notices,
//     at its idle polling period.
//
// This header lives in uapi/ so that neither side includes the other: driver/bus/sim implements
// a Bus over a Function, tools/sim implements Function. A device daemon can later carry the same
// calls over a UNIX socket, passing the fds (that is why regions carry fd and offset).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <optional>

#include "uapi/result.h"

namespace onchip::vpci {

struct SharedMemory {
  int fd = -1;        // memfd; the owner keeps it open
  uint64_t size = 0;  // bytes
};

// A page a driver maps read-only over its mapping of bar0(), from a file of its own: a device
// daemon's client sees the clock page there (tools/sim/bar.h), the rest of its BAR0 view being
// its own memory (tools/simd/client_window.h).
struct ReadOnlyPage {
  int fd = -1;              // the function keeps it open
  uint64_t bar_offset = 0;  // 4 KiB aligned, inside BAR0
};

struct DmaRegion {
  uint64_t iova = 0;      // the address the device uses (what goes into PRM fields)
  uint64_t length = 0;    // bytes; iova and length are 4 KiB aligned
  void* host = nullptr;   // the memory in the driver's address space
  int fd = -1;            // the same memory as a shareable fd, or -1 (in-process devices only)
  uint64_t fd_offset = 0;
};

// The TPH Requester capability of a function whose steering-tag (ST) table lives in its MSI-X
// table (PCIe "ST Table Location" = MSI-X table), the layout ConnectX uses. Entry i is the
// 16-byte MSI-X entry at BAR0 offset st_table_offset + 16 * i; its tag sits in the Vector
// Control dword (entry byte 12, little-endian like every MSI-X field): ST Lower in bits 23:16,
// ST Upper in bits 31:24. Software writes tags there; the device puts the tag of the entry an
// mkey names (mkc.pcie_tph_steering_tag_index) into the TLPs that reach that memory.
struct TphCapability {
  uint64_t st_table_offset = 0;  // BAR0 offset of entry 0
  uint16_t st_table_size = 0;    // entries
};
inline constexpr uint64_t kMsixEntryBytes = 16;
inline constexpr uint64_t kMsixVectorControlOffset = 12;
inline constexpr uint32_t kMsixStShift = 16;  // ST Lower 23:16, ST Upper 31:24

// The data engine's sleep word, a futex shared by the device and every driver that maps BAR0. A
// software device polls its doorbells (doorbell records, UAR doorbells, BlueFlame registers)
// without being told while it has a CPU to spare; otherwise, and after an idle period, it stores
// kEngineAsleep here, looks at its doorbells once more and waits on the word (FUTEX_WAIT, not
// private: the word is in a shared memfd). A driver that has just rung a doorbell loads the word
// (after the doorbell's store is globally visible) and, only when it is non-zero, calls
// WakeEngine: it swaps the word to 0 and wakes the waiter. One wake-up after the device slept, no
// syscall while it runs (io_uring's SQPOLL with IORING_SQ_NEED_WAKEUP). The swap makes a wake that
// lands before the device's wait harmless: the wait sees 0 and returns at once. The word is in the
// page after the init segment, below the first UAR page; real hardware has no such word. A device
// daemon's client finds a word of its own there (its window, tools/simd/client_window.h), which
// the device stores and waits on beside this one.
inline constexpr uint64_t kEngineSleepWordOffset = 0x5000;
inline constexpr uint32_t kEngineAsleep = 1;

// The driver's half of the sleep word: wakes the engine whose word is at `word` if it sleeps.
// Lock-free and never blocks; a syscall only when the word said the engine sleeps.
inline void WakeEngine(uint32_t* word) {
  std::atomic_ref<uint32_t> w(*word);
  // The doorbell's store before the word's read (a store then a load of another location needs
  // a full barrier on x86): the engine stores the word and then looks at the doorbells, so one of
  // the two sees the other. ThreadSanitizer cannot model a standalone fence (GCC refuses it,
  // -Wtsan); there a locked read-modify-write of the word is the barrier and the read at once.
  // Elsewhere the fence and a plain load: the RMW would take the word's line exclusive on every
  // doorbell, which two-process ping-pongs measurably pay for.
#if defined(__SANITIZE_THREAD__)
  if (w.fetch_add(0, std::memory_order_seq_cst) == 0) return;
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (w.load(std::memory_order_seq_cst) == 0) return;
#endif
  if (w.exchange(0, std::memory_order_seq_cst) == 0) return;  // another waker came first
  syscall(SYS_futex, word, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

class Function {
 public:
  virtual ~Function() = default;

  virtual SharedMemory bar0() const = 0;
  // What the driver maps read-only over bar0()'s mapping (nullopt: nothing).
  virtual std::optional<ReadOnlyPage> bar0_read_only_page() const { return std::nullopt; }

  // EINVAL: not 4 KiB aligned, zero length, or overlapping an existing mapping.
  virtual Result<void> MapDma(const DmaRegion& region) = 0;
  // ENOENT: no mapping starts at iova with that length. The device stops using the memory before
  // this returns.
  virtual Result<void> UnmapDma(uint64_t iova, uint64_t length) = 0;

  // The TPH capability, or nullopt for a function without TPH or without an ST table.
  virtual std::optional<TphCapability> tph() const { return std::nullopt; }

  // Tells the device a doorbell was written: wakes it if it sleeps (WakeEngine on its sleep
  // word). Cheap, never blocks, safe from any thread.
  virtual void Kick() = 0;

  // The eventfd the device signals for interrupt (MSI-X) vector `vector`: one count each time an
  // armed EQ whose eqc.intr is `vector` gets an EQE. The function owns the fd; -1 when it offers
  // no interrupts for that vector. (In-process devices; a daemon would pass it like BAR0's fd.)
  virtual int InterruptFd(uint16_t vector) const {
    (void)vector;
    return -1;
  }

  // The vector this function's user gives its EQs: 0 for a function it has to itself; on a
  // function shared through a daemon, the client's own (its other vectors are not its to read).
  virtual uint16_t CompletionVector() const { return 0; }
  // An fd that hangs up when this function is gone for good (a daemon's function: the
  // connection to the daemon); -1 for a function that lives as long as this process holds it.
  virtual int LinkFd() const { return -1; }
};

}  // namespace onchip::vpci
