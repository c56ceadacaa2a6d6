// The device daemon: software ConnectX functions served to client processes over one UNIX
// socket (uapi/simd_protocol.h). Start() builds the functions (sim::Devices on the one wire of
// this process, each with its own MAC, IPv4 address and GIDs, all run by one device thread:
// tools/sim/device_thread.h) and brings each up with the driver; Run() accepts clients, one
// thread per connection (session.h), until Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <sys/types.h>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tools/simd/quota.h"
#include "tools/simd/served_function.h"
#include "tools/simd/session.h"
#include "uapi/result.h"

namespace onchip::simd {

struct ServerOptions {
  std::string socket_path;
  uint32_t functions = 2;
  // How long the device thread polls every function after the last work of any before it
  // sleeps (and the next doorbell pays a wake-up); unset: the software ConnectX's default.
  std::optional<std::chrono::microseconds> engine_idle_period;
  // Whether the device thread spins between passes (sim::DeviceConfig::engine_spin).
  sim::DeviceConfig::Spin engine_spin = sim::DeviceConfig::Spin::kWhenCpuSpare;
  // The device thread's scheduling class (sim::DeviceConfig::engine_sched).
  sim::DeviceConfig::Sched engine_sched = sim::DeviceConfig::Sched::kRealtimeWhenPermitted;
  // Every function's port 1 link layer: Ethernet (RoCE, the default) or InfiniBand, each IB
  // port with a LID of its own from the fabric's subnet manager.
  sim::DeviceConfig::PortType port_type = sim::DeviceConfig::PortType::kEthernet;
  // Who may connect besides the daemon's own user and root: processes whose primary group is
  // this one (SO_PEERCRED names no supplementary groups). The socket is made 0660.
  std::optional<gid_t> group = std::nullopt;
  // Connections served at once; one more is refused with EUSERS.
  uint32_t max_clients = 256;
  // How long a connection may take to send its first frame (hello or status).
  std::chrono::milliseconds hello_timeout{5000};
  // What each client may hold at once (EAGAIN past it, ENOMEM past its mappings).
  Quota quota = Quota::Default();
};

// $XDG_RUNTIME_DIR/onchip/simd.sock, else /run/onchip/simd.sock.
std::string DefaultSocketPath();

// Function i's MAC (last byte 1 + i) and IPv4 address (127.0.0.1 + i): what the verbs
// environment's sysfs tree advertises for it.
sim::DeviceConfig FunctionConfig(uint32_t index);

class Server {
 public:
  // EADDRINUSE when a daemon already answers on the socket; a stale socket file is replaced.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();

  // Accepts and serves clients until Stop(); then ends every session (each releases what its
  // client owned), closes the functions and removes the socket.
  void Run();
  // Async-signal-safe.
  void Stop();

  std::string StatusJson() const;

 private:
  Server() = default;
  void Reap(bool all);
  // Serves a connection just accepted, or refuses it (credentials, the connection cap) with a
  // frame that says why.
  void Admit(int sock);
  // Sessions that are not refusals (mu_ held).
  std::size_t served_clients() const;

  ServerOptions options_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::vector<std::unique_ptr<ServedFunction>> functions_;
  struct Client {
    std::unique_ptr<Session> session;
    std::thread thread;
  };
  mutable std::mutex mu_;
  std::list<Client> clients_;
  uint32_t next_id_ = 1;
};

}  // namespace onchip::simd
