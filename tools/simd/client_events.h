// The events of a client's queues, forwarded by the daemon (driver/forwarded_eq.h reads them).
//
// A client creates no EQ of its own: its CQs report to the daemon's completion EQ, and the
// engine raises its queues' async events there too, as user CQs and QPs report to the kernel's
// EQs. The daemon's event thread hands every EQE whose queue is a client's to that client
// (event_routes.h), which lands here: a copy goes into a ring of 2^kLogEntries EQEs in the
// client's window (client_window.h, kEventRingOffset), owner bit last, and an eventfd of the
// client's is signalled. The client's count of EQEs taken is a word at kEventCiOffset of its
// window; an EQE that finds the ring full (as the client's count says, which only the client
// can get wrong) is dropped and counted, as the kernel drops events a reader lets pile up.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "uapi/prm/eqe.h"
#include "uapi/result.h"

namespace onchip::simd {

class ClientEvents {
 public:
  static constexpr uint32_t kLogEntries = 6;  // 64 EQEs: one 4 KiB page

  // Over the window memfd `window_fd` (client_window.h).
  static Result<std::unique_ptr<ClientEvents>> Create(int window_fd);
  ~ClientEvents();
  ClientEvents(const ClientEvents&) = delete;
  ClientEvents& operator=(const ClientEvents&) = delete;

  // The eventfd the client waits on (the daemon keeps it; the hello passes a copy).
  int fd() const { return fd_; }
  void Forward(const prm::pod::mlx5_eqe& eqe);
  uint64_t dropped() const;

 private:
  ClientEvents(int fd, std::byte* pages) : fd_(fd), pages_(pages) {}

  const int fd_;
  std::byte* const pages_;  // the daemon's mapping of the ring page and the count's page
  mutable std::mutex mu_;
  uint32_t produced_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace onchip::simd
