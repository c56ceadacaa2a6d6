// From a CQE's QP number to the work queues it completes: a two-level table over the 24-bit QP
// number space (4096 leaves of 4096 entries, a leaf allocated when its first QP arrives), so a
// lookup is two dependent loads and no lock. The object layer inserts a QP after CREATE_QP and
// erases it before DESTROY_QP frees its queues; leaves live as long as the table, so a poller
// racing an erase reads either the queues or null, never freed memory.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "uapi/result.h"

namespace onchip::driver::rings {

class SendQueue;
class RecvQueue;
class SrqRing;
class QpnTable;

// The user index the driver gives each XRC SRQ (xrc_srqc.user_index, what its receive CQEs
// carry in srqn): this bit set, so a receive CQE names its XRC SRQ whatever QP it names (an XRC
// target QP may be gone, its number reused); regular QPs' CQEs carry user index 0.
inline constexpr uint32_t kXrcUserIndexFlag = 1u << 23;

// A QP's queues as its completions need them: the send queue, and either its own receive queue
// or the SRQ it receives through (null when it has neither). An XRC target QP has none of them:
// its receives retire on the XRC SRQ whose user index the CQE's srqn field holds, found in
// `xrc_srqs` (the device's table keyed by those user indices).
struct WorkQueues {
  SendQueue* sq = nullptr;
  RecvQueue* rq = nullptr;
  SrqRing* srq = nullptr;
  const QpnTable* xrc_srqs = nullptr;
};

class QpnTable {
 public:
  static constexpr uint32_t kLeafBits = 12;
  static constexpr uint32_t kLeafSize = 1u << kLeafBits;
  static constexpr uint32_t kMaxQpn = 0xffffff;

  QpnTable() = default;
  ~QpnTable();
  QpnTable(const QpnTable&) = delete;
  QpnTable& operator=(const QpnTable&) = delete;

  // EINVAL for a QPN above 24 bits or null queues, EEXIST if the QPN is taken, ENOMEM if a leaf
  // cannot be allocated. `queues` must outlive its entry.
  Result<void> Insert(uint32_t qpn, const WorkQueues* queues);
  // Removes the entry (no-op when absent).
  void Erase(uint32_t qpn);

  // The queues of `qpn`, or null. Lock-free, any thread.
  const WorkQueues* Find(uint32_t qpn) const {
    if (qpn > kMaxQpn) return nullptr;
    const Leaf* leaf = top_[qpn >> kLeafBits].load(std::memory_order_acquire);
    if (leaf == nullptr) return nullptr;
    return (*leaf)[qpn & (kLeafSize - 1)].load(std::memory_order_acquire);
  }

 private:
  using Leaf = std::array<std::atomic<const WorkQueues*>, kLeafSize>;
  std::array<std::atomic<Leaf*>, (kMaxQpn >> kLeafBits) + 1> top_{};
  std::mutex writers_;
};

}  // namespace onchip::driver::rings
