// Copies between host memory and write-combined device memory (MEMIC, BlueFlame registers).
//
// To device: CopyToDevice(dst, src, len) walks the destination in 64-byte lines, strictly
// ascending in program order. Each line is loaded whole from the source into registers and then
// stored (no loads between a line's stores), so a write-combining buffer fills without
// interruption and can leave as one 64-byte TLP. A destination that does not start or end on a
// line boundary gets partial head and tail lines: their source bytes are gathered first, then
// stored ascending in naturally aligned pieces of 4, 8 or 16 bytes. A copy shorter than a line
// under the contract below (a sequence number, an order field) is a few inlined moves held in
// registers: no loop, no stack buffer.
//
// Ordering: a copy is ordered as plain stores to the same memory are, and pays no fence for it.
// On write-back memory (the software ConnectX's device memory) that is program order. On
// write-combining memory (a real MEMIC BAR) the stores may wait in fill buffers until the next
// SFENCE: every onchip doorbell begins with one (WcStart, and WcLockGuard), so a work request
// posted after the copy reads the copied bytes, which is the guarantee rdma-core's
// mlx5_memcpy_to_dm gives. A caller that publishes the bytes any other way (a flag in host
// memory that a peer reads) calls WcFlush() between the copy and the flag. Variants whose line
// stores are weakly ordered on every memory type (nt, movdir64b: `weak_lines`) end a copy that
// stored lines with WcFlush, so that the promise holds for them too.
//
// The caller guarantees (the hardware's rule for MEMIC, checked by the driver, EINVAL there):
//   dst % 4 == 0 and len % 4 == 0. Under that contract no store narrower than 4 bytes is ever
//   issued and no byte outside [dst, dst+len) is written. src has no alignment requirement and
//   is read only inside [src, src+len). Other inputs are still copied exactly (pieces of 1 and 2
//   bytes appear), which is right for host memory and wrong for MEMIC.
// What x86 does NOT promise (see barriers.h): that lines leave the CPU in ascending order (WC
// buffers drain in any order; only a fence is an order point), or that a line stored
// with several instructions leaves as one TLP. MOVDIR64B is the one variant whose 64-byte
// writes are architecturally whole.
//
// From device: CopyFromDevice(dst, src, len) reads device memory with the widest loads the CPU
// has, streaming (MOVNTDQA) when available; same 4-byte contract on src and len. Reads from the
// device are slow (a round trip per fill); keep them out of hot paths. No fence is issued:
// order against a completion with FromDeviceBarrier().
//
// Variant choice: per memory type of the target (memory_type.h), once per process, from CPUID,
// unless ONCHIP_WC_COPY=<to-device name> / ONCHIP_DEV_READ=<from-device name> names a variant
// this CPU supports (the override holds for every target). On write-combining and uncached
// memory (a real BAR) the widest store wins, MOVDIR64B first; on write-back memory (the software
// ConnectX's BAR, a shared memfd) the widest store that goes through the cache: MOVDIR64B and
// MOVNTDQ bypass it, and measured 115 ns against the vendor loop's 8 ns for a 64-byte
// ibv_memcpy_to_dm there (AMD EPYC, Zen 4). The driver takes the kernel for each of its targets
// (ToDeviceFor: the DM window, the BlueFlame page) from its bus's mapping; CopyToDevice and
// BlueFlameCopy64 below are the write-combining choice, for callers that know no target. The
// hot paths are one pointer load and an indirect call; no syscall, allocation, lock or
// formatting.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mmio/cpu_features.h"
#include "mmio/memory_type.h"

namespace onchip::mmio {

using CopyFn = void (*)(void* dst, const void* src, std::size_t len);
using LineFn = void (*)(void* dst, const void* src);

enum class Isa : uint8_t { kBaseline, kSse41, kAvx2, kAvx512f, kMovdir64b };
bool CpuHas(Isa isa, const CpuFeatures& cpu);
std::string_view IsaName(Isa isa);  // "AVX-512F", "MOVDIR64B", ...

struct ToDeviceVariant {
  std::string_view name;     // ONCHIP_WC_COPY value: movq8 sse avx2 avx512 movdir64b nt
  Isa needs;
  CopyFn copy;               // the whole copy (fenced only if weak_lines, see above)
  LineFn line64;             // one BlueFlame line (BlueFlameCopy64): src read 16 bytes at a time
  std::string_view stores;   // the instructions one line costs, for reports
  bool weak_lines;           // line stores weakly ordered even on write-back memory
};

struct FromDeviceVariant {
  std::string_view name;     // ONCHIP_DEV_READ value: sse sse41_stream avx2_stream avx512_stream
  Isa needs;
  CopyFn copy;
  std::string_view loads;
};

// Every variant this build has, supported by this CPU or not, in preference order (worst first).
std::span<const ToDeviceVariant> ToDeviceVariants();
std::span<const FromDeviceVariant> FromDeviceVariants();
const ToDeviceVariant* FindToDevice(std::string_view name);
const FromDeviceVariant* FindFromDevice(std::string_view name);

// The choice itself, pure so it can be tested: `override_name` is the environment value (or
// nullptr), `target` the memory the copies write. Writes a one-line reason into `why`
// (truncated to `why_len`, NUL-terminated).
const ToDeviceVariant& SelectToDevice(const char* override_name, const CpuFeatures& cpu,
                                      MemoryType target, char* why, std::size_t why_len);
const FromDeviceVariant& SelectFromDevice(const char* override_name, const CpuFeatures& cpu,
                                          char* why, std::size_t why_len);

// The process's choice for copies into memory of type `target` (made on first call, for every
// type at once) and its account: "avx2 [2 x 32-byte VMOVDQA] (auto for write-back memory: ...)".
const ToDeviceVariant& ToDeviceFor(MemoryType target);
std::string_view ToDeviceReport(MemoryType target);
// The same for reads from the device (one choice for every target): "avx512_stream [...] (...)".
std::string_view FromDeviceReport();

// The process-wide choice behind CopyToDevice / BlueFlameCopy64 / CopyFromDevice: to device,
// ToDeviceFor(kWriteCombining). WcCopyReport() accounts for it, e.g. "to-device movdir64b
// [1 x MOVDIR64B] (auto for write-combining memory: widest this CPU has (MOVDIR64B));
// from-device avx512_stream [...] (...)".
const ToDeviceVariant& ActiveToDevice();
const FromDeviceVariant& ActiveFromDevice();
std::string_view WcCopyReport();

namespace detail {
extern std::atomic<CopyFn> g_to_device;
extern std::atomic<LineFn> g_line64;
extern std::atomic<CopyFn> g_from_device;
}  // namespace detail

inline void CopyToDevice(void* dst, const void* src, std::size_t len) {
  detail::g_to_device.load(std::memory_order_relaxed)(dst, src, len);
}

// One BlueFlame-sized line: dst 64-byte aligned, src any alignment, exactly 64 bytes, stored
// with the active variant's line kernel. No fence: bracket with WcStart/WcFlush (WcLockGuard).
// The source is a WQE the caller wrote a few nanoseconds earlier, one 16-byte segment per store,
// so the kernels read it 16 bytes (movq8: 8) at a time: each load is then forwarded from one
// store still in the store buffer, where a 32- or 64-byte load spanning several would wait for
// them all to reach the cache (about 4 ns of a 10 ns post on Skylake-SP). The stores to dst keep
// the variant's width. MOVDIR64B is the exception: its one instruction reads the line itself.
inline void BlueFlameCopy64(void* dst, const void* src) {
  detail::g_line64.load(std::memory_order_relaxed)(dst, src);
}

inline void CopyFromDevice(void* dst, const void* src, std::size_t len) {
  detail::g_from_device.load(std::memory_order_relaxed)(dst, src, len);
}

}  // namespace onchip::mmio
