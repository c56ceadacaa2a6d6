// One client connection of the device daemon: the kernel's side of an open uverbs file.
//
// The first frame is kHello (which function, and the client's own /proc/self/mem and
// /proc/self/maps; the daemon answers with the client's BAR0 window (client_window.h), the clock
// page, its interrupt eventfd, its IOVA window and uid) or kStatus (the daemon's state as JSON,
// then the connection closes). Afterwards: firmware commands (refused with EPERM unless user space
// may issue them; the uid stamped; creations and destructions noted), DMA map and unmap (fd-backed
// memory the daemon maps itself once the file is sealed against shrinking, client_file.h; memory
// without an fd reached through the address-space handles of the hello; only inside the client's
// IOVA window). When the connection ends for any reason (exit, crash, SIGKILL, a malformed frame)
// the session releases everything the client owned: QPs to ERR, objects in reverse creation order,
// DMA unmapped.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "tools/simd/client_window.h"
#include "tools/simd/owned_objects.h"
#include "tools/simd/quota.h"
#include "tools/simd/served_function.h"
#include "tools/sim/process_memory.h"

namespace onchip::simd {

class Session {
 public:
  // The window of IOVA space client `id` may map in: 64 GiB each, above the daemon's own.
  static constexpr uint64_t kIovaWindowBits = 36;
  static uint64_t IovaBase(uint32_t id) { return (uint64_t{id} + 1) << kIovaWindowBits; }
  // The firmware uid client `id` issues commands under and its memory is mapped for: ids wrap
  // around the 16-bit tag, skipping 0 (the daemon's own). The server never gives a live
  // session's uid to another.
  static uint16_t UidFor(uint32_t id) { return static_cast<uint16_t>(id % 0xffff + 1); }

  // Why a connection is not served: its first frame is answered with this, and it ends.
  struct Refusal {
    int errno_value;
    const char* why;  // static text
  };
  // `status` renders the daemon's state for a kStatus request. The first frame must arrive
  // within `hello_timeout`.
  Session(int sock, uint32_t id, std::vector<ServedFunction*> functions,
          std::function<std::string()> status, std::chrono::milliseconds hello_timeout,
          const Quota& quota, std::optional<Refusal> refusal = std::nullopt);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves the connection until it ends, then releases what the client owned.
  void Run();
  // Ends the connection from another thread (daemon shutdown); Run returns soon after.
  void Shutdown();
  bool finished() const { return finished_.load(); }
  bool refused() const { return refusal_.has_value(); }
  uint16_t uid() const { return uid_; }

  // This client as a JSON object (pid, uid, function, objects by kind, DMA mappings, MEMIC bytes);
  // empty before its hello.
  std::string DescribeJson() const;

 private:
  struct Mapping {
    uint64_t length;
    void* host;  // the daemon's own mapping of the client's fd, or null for process memory
  };

  Result<void> Serve(const Frame& frame);
  Result<void> Hello(const Frame& frame);
  Result<void> Command(const Frame& frame);
  Result<void> MapDma(Frame& frame);
  Result<void> UnmapDma(const Frame& frame);
  Result<void> UpdateMkey(const Frame& frame);
  Result<void> SteeringTag(const Frame& frame);
  Result<void> Reply(MessageType type, uint32_t status, std::span<const std::byte> a = {},
                     std::span<const std::byte> b = {}, std::span<const int> fds = {});
  Result<void> Refuse(MessageType type, int errno_value, const char* why);
  void Release();

  const int sock_;
  const uint32_t id_;
  const std::vector<ServedFunction*> functions_;
  const std::function<std::string()> status_;
  const std::chrono::milliseconds hello_timeout_;
  const Quota quota_;
  const std::optional<Refusal> refusal_;
  pid_t pid_ = 0;
  uid_t user_ = 0;
  uint16_t uid_ = 0;  // the firmware owner tag
  uint64_t memlock_limit_ = 0;  // bytes the client may have mapped at once (set at hello)
  ServedFunction* function_ = nullptr;
  std::optional<uint16_t> vector_;  // its interrupt vector (ServedFunction::TakeVector)
  mutable std::mutex mu_;  // owned_ and mappings_ (Run writes, DescribeJson reads)
  OwnedObjects owned_;
  // Its view of BAR0 (client_window.h), from the hello until Release.
  std::unique_ptr<ClientWindow> window_;
  // The client's address space as its hello handed it over (its /proc/self/mem and maps), for
  // memory without an fd; null when it gave none.
  std::shared_ptr<const sim::ProcessFile> memory_;
  std::map<uint64_t, Mapping> mappings_;  // by IOVA
  uint64_t mapped_bytes_ = 0;             // their lengths together
  std::map<uint8_t, uint32_t> steering_tags_;  // ST table entries it holds references to
  std::atomic<bool> finished_{false};
};

}  // namespace onchip::simd
