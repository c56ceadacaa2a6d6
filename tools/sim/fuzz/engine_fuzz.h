// The data engine's fuzz target: malformed WQEs, wrong ds counts, garbage doorbell records and
// UAR doorbells, WQEs and keys pointing outside every IOMMU mapping, against a device set up
// with an EQ, two CQs, an RC pair, a UD pair, an SRQ-fed RC QP, host, MEMIC and window keys.
// After every input the engine must have written only error CQEs or moved QPs to error, never
// crashed, hung or touched memory outside a mapping (ASan), and the firmware's tables must be
// consistent (Firmware::CheckInvariants).
//
// Input: records, each starting with an op byte (op % 6):
//   0 raw      u16 offset, u8 n, n bytes: written into the queue area (rings, SRQ, CQs)
//   1 wqe      u8 qp, u8 opcode, u8 fm_ce_se, u8 ds, u8 key_mask, 48 bytes of segments: a WQE
//              at the QP's producer index with a consistent ctrl (index, qpn); each 16-byte
//              segment whose key_mask bit is set gets a live key and address patched in; then
//              the send doorbell record moves past it
//   2 record   u8 which, u32 value: a doorbell record word (QP send/receive, SRQ, CQ ci/arm)
//   3 uar      u8 which, u64 value: a UAR doorbell store (CQ arm, EQ arm, EQ update)
//   4 pass     one engine pass
//   5 error    u8 qp: QP_2ERR on it
// Every input ends with engine passes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onchip::sim::fuzz {

struct EngineFuzzResult {
  int wqes = 0;    // structured WQEs posted
  int passes = 0;  // engine passes run
  int cqes = 0;    // CQEs the device produced
  int errors = 0;  // QPs in the error state at the end
};

// How the harness maps its host memory: as pointer memory (Iommu::Map), or as process memory of
// this process's own pid (Iommu::MapProcess), where every device access copies.
enum class HostMemory { kPointer, kProcess };
struct EngineFuzzOptions {
  HostMemory memory = HostMemory::kPointer;
  // The RC QPs get ack_timeout 0 (wait forever) and min_rnr_nak 0 (655 ms) instead of timers of
  // microseconds: no timer fires during an input, so its result cannot depend on how fast the
  // engine runs (copying process memory is slower), and the two kinds of memory can be compared.
  bool quiet_timers = false;
};

// Runs one input; aborts if the device breaks an invariant.
EngineFuzzResult FuzzEngine(const uint8_t* data, std::size_t size,
                            const EngineFuzzOptions& options = {});

}  // namespace onchip::sim::fuzz
