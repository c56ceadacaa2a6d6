// The device's own memory-registration queue: a REG_UMR queue pair (qpc.st REG_UMR, which only
// the function's owner, uid 0, may create) with a completion queue it polls itself. It is how
// the driver, in the kernel's role, changes a live MR in place the way mlx5_ib does: one UMR
// work request on the MR's mkey with the new access rights or PD, so ibv_rereg_mr keeps the MR's
// lkey and rkey (peers that hold the rkey keep reaching it).
//
// Created on first use (Device::UpdateMkeyInPlace), on a PD of its own, the shared UAR's
// doorbell and the device's completion EQ; brought to RTS at once (RST2INIT port 1, INIT2RTR,
// RTR2RTS). One request at a time, under a lock: post the WQE, record then doorbell, and wait
// for its CQE (a slow path; it may sleep). An error CQE leaves the QP in error: the queue reports it
// `broken()` and the device makes a new one next time. Destroy() gives the QP, CQ and PD back
// before the completion EQ goes (Device::Close).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "driver/cmd/owner_channel.h"
#include "driver/queue_buffer.h"
#include "driver/registration_queue.h"
#include "uapi/result.h"

namespace onchip::driver {

namespace cmd {
class Commander;
}

class Device;
struct Bfreg;

using cmd::MkeyUpdate;

class UmrQueue final : public RegistrationQueue {
 public:
  // A RegistrationQueueMaker (registration_queue.h): driver::Open gives it to the Device.
  static Result<std::unique_ptr<RegistrationQueue>> Create(Device& device);
  ~UmrQueue() override;
  UmrQueue(const UmrQueue&) = delete;
  UmrQueue& operator=(const UmrQueue&) = delete;

  // One UMR on `mkey` (its full key: index and variant), waited for. EIO with the CQE's
  // syndrome when the device refuses it (the queue is broken after that); ETIMEDOUT when no
  // completion comes within a few seconds.
  Result<void> UpdateMkey(uint32_t mkey, const MkeyUpdate& update) override;
  bool broken() const override { return broken_; }

  // DESTROY_QP, DESTROY_CQ, DEALLOC_PD; the first failure is returned, the rest still run.
  Result<void> Destroy(cmd::Commander& commander) override;

 private:
  explicit UmrQueue(Device& device) : device_(device) {}
  Result<void> BringUp();
  Result<void> WaitForCompletion();

  Device& device_;
  std::mutex mu_;
  QueueBuffer sq_;        // kSqWqebbs basic blocks
  QueueBuffer qp_dbr_;    // prm::QpDoorbellRecord
  QueueBuffer cq_ring_;   // kCqEntries 64-byte CQEs
  QueueBuffer cq_dbr_;    // prm::CqDoorbellRecord
  Bfreg* doorbell_ = nullptr;
  uint32_t pdn_ = 0, cqn_ = 0, qpn_ = 0;
  bool have_pd_ = false, have_cq_ = false, have_qp_ = false;
  uint32_t sq_head_ = 0;  // basic blocks posted
  uint32_t cq_ci_ = 0;
  bool broken_ = false;
};

}  // namespace onchip::driver
