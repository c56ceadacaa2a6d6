// The client side of the device daemon (tools/simd): one function of a software ConnectX that
// another process serves, reached over a UNIX socket (uapi/simd_protocol.h).
//
// Attach() says hello and returns the two seams the driver needs:
//   - a vpci::Function: BAR0 is the daemon's memfd (SCM_RIGHTS), mapped MAP_SHARED by the sim
//     bus, so UAR doorbells, BlueFlame, the MEMIC window and the engine's sleep word are plain
//     stores and loads; Kick() writes the device's eventfd (passed once); InterruptFd() is the
//     vector's eventfd (passed once); MapDma sends the region's fd and offset, which the daemon
//     maps itself; memory without an fd is looked up among this process's open fds (a memfd or
//     hugetlbfs file mapped from an fd the process still holds), else sent by address, and the
//     daemon's device reaches it in this process (process_vm_readv/writev);
//   - a cmd::Commander: every firmware command is a message; the daemon owns the command queue,
//     stamps this client's uid, refuses what user space may not issue (EPERM) and answers with
//     the output bytes;
//   - a cmd::OwnerChannel: what the daemon does with resources only it holds (an MR changed in
//     place by its REG_UMR QP).
// Once the daemon is gone (the socket saw EOF or an error) every call answers EIO at once and
// the connection stays dead; `dead()` lets a caller look without a syscall.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "driver/bus/simd/frame_io.h"
#include "driver/cmd/commander.h"
#include "driver/cmd/owner_channel.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::driver::bus::simd {

// One socket to the daemon, shared by the function and the commander of one attachment.
class Connection {
 public:
  ~Connection();
  static Result<std::shared_ptr<Connection>> Dial(const std::string& socket_path);

  // Sends a request and reads its reply, one at a time. EIO once the daemon is gone.
  Result<onchip::simd::Frame> Call(onchip::simd::MessageType type,
                                   std::initializer_list<std::span<const std::byte>> parts,
                                   std::span<const int> fds = {});
  bool dead() const { return dead_.load(std::memory_order_relaxed); }
  int fd() const { return sock_; }
  // Runs `lost` once, on the calling thread, when a call finds the daemon gone. The bus's gone
  // flag is set this way at once, so the destroy that follows a failed call already knows the
  // function is gone (the event thread that watches the socket may not have woken yet).
  void OnDeath(std::function<void()> lost);

 private:
  explicit Connection(int sock) : sock_(sock) {}
  std::function<void()> on_death_;  // under mu_
  std::mutex mu_;
  int sock_;
  std::atomic<bool> dead_{false};
};

struct Attachment {
  std::unique_ptr<vpci::Function> function;
  std::unique_ptr<cmd::Commander> commander;
  std::unique_ptr<cmd::OwnerChannel> owner;
  std::shared_ptr<Connection> connection;
  uint64_t iova_base = 0;  // where this client's IOVA window starts
  uint32_t client_id = 0;
  uint16_t uid = 0;
};

// `address` is "<socket path>" (function 0) or "<socket path>#<function>". ENOENT/ECONNREFUSED
// when no daemon listens there, EINVAL for a bad address, ENODEV for a function the daemon does
// not serve, EPROTO for a daemon speaking another protocol.
Result<Attachment> Attach(std::string_view address);

}  // namespace onchip::driver::bus::simd
