// onchip-simd: the device daemon. Serves software ConnectX functions to other processes over a
// UNIX socket until SIGTERM or SIGINT.
//
//   onchip-simd [--socket PATH] [--functions N] [--engine-idle-ms MS] [--link-layer eth|ib]
//   onchip-simd --version     the commit it was built from (log/version.h)
//
// --link-layer ib: every function's port runs InfiniBand (LIDs from the daemon's subnet manager,
// addresses without a GRH allowed) instead of Ethernet (RoCE, the default).
// --engine-idle-ms: how long the engine (one thread for all functions) keeps polling after the
// last work of any function before it sleeps (default 1 ms); a longer period trades idle CPU for
// no wake-up syscall between bursts.
// --engine-spin: when the engine spins between passes (sim::DeviceConfig::engine_spin; auto:
// while a CPU is spare). --engine-sched: realtime (the default) runs the engine's thread
// SCHED_FIFO where the daemon may, normal keeps it a normal thread (DeviceConfig::engine_sched).
//
// --group NAME: processes of that primary group may connect too (the socket is 0660; by
// default only the daemon's own user and root may). --max-clients N: connections served at once
// (default 256). --hello-timeout-ms MS: how long a connection may take to say hello (5000).
// --quota NAME=N (repeatable): what each client may hold at once, per object kind (uar, pd, qp,
// ...), memic_bytes, mappings or steering_tags (tools/simd/quota.h has the defaults).
//
// Prints "onchip simd: serving N function(s) on PATH" once it accepts clients (a starter waits
// for that line or for the socket), then runs in the foreground; tools/onchip sim start runs it
// in the background.
#include <grp.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include "log/version.h"
#include "tools/simd/server.h"

namespace {

onchip::simd::Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->Stop();
}

int Usage() {
  std::fprintf(stderr,
               "usage: onchip-simd [--socket PATH] [--functions N] [--engine-idle-ms MS] "
               "[--link-layer eth|ib] [--engine-spin auto|always|never] "
               "[--engine-sched realtime|normal] [--group NAME] [--max-clients N] [--quota NAME=N] "
               "[--hello-timeout-ms MS]\n");
  return 2;
}

// A whole positive number of milliseconds, or nullopt.
std::optional<std::chrono::milliseconds> PositiveMilliseconds(std::string_view n) {
  uint32_t ms = 0;
  const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), ms);
  if (ec != std::errc() || end != n.data() + n.size() || ms == 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace

int main(int argc, char** argv) {
  onchip::simd::ServerOptions options;
  options.socket_path = onchip::simd::DefaultSocketPath();
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--version") {
      std::printf("onchip-simd %s\n", onchip::log::Version());
      return 0;
    }
    if (a == "--socket" && i + 1 < argc) {
      options.socket_path = argv[++i];
    } else if (a == "--functions" && i + 1 < argc) {
      const std::string_view n = argv[++i];
      if (std::from_chars(n.data(), n.data() + n.size(), options.functions).ec != std::errc())
        return Usage();
    } else if (a == "--engine-idle-ms" && i + 1 < argc) {
      const auto ms = PositiveMilliseconds(argv[++i]);
      if (!ms) return Usage();
      options.engine_idle_period = *ms;
    } else if (a == "--engine-spin" && i + 1 < argc) {
      const std::string_view p = argv[++i];
      using Spin = onchip::sim::DeviceConfig::Spin;
      if (p == "auto")
        options.engine_spin = Spin::kWhenCpuSpare;
      else if (p == "always")
        options.engine_spin = Spin::kAlways;
      else if (p == "never")
        options.engine_spin = Spin::kNever;
      else
        return Usage();
    } else if (a == "--engine-sched" && i + 1 < argc) {
      const std::string_view p = argv[++i];
      using Sched = onchip::sim::DeviceConfig::Sched;
      if (p == "realtime")
        options.engine_sched = Sched::kRealtimeWhenPermitted;
      else if (p == "normal")
        options.engine_sched = Sched::kNormal;
      else
        return Usage();
    } else if (a == "--group" && i + 1 < argc) {
      const char* name = argv[++i];
      const group* g = getgrnam(name);
      if (g == nullptr) {
        std::fprintf(stderr, "onchip simd: no group named %s\n", name);
        return 2;
      }
      options.group = g->gr_gid;
    } else if (a == "--max-clients" && i + 1 < argc) {
      const std::string_view n = argv[++i];
      if (std::from_chars(n.data(), n.data() + n.size(), options.max_clients).ec != std::errc() ||
          options.max_clients == 0)
        return Usage();
    } else if (a == "--quota" && i + 1 < argc) {
      const char* assignment = argv[++i];
      if (!options.quota.Set(assignment)) {
        std::fprintf(stderr, "onchip simd: --quota %s: want NAME=N (an object kind, memic_bytes, "
                     "mappings or steering_tags)\n", assignment);
        return 2;
      }
    } else if (a == "--hello-timeout-ms" && i + 1 < argc) {
      const auto ms = PositiveMilliseconds(argv[++i]);
      if (!ms) return Usage();
      options.hello_timeout = *ms;
    } else if (a == "--link-layer" && i + 1 < argc) {
      const std::string_view l = argv[++i];
      if (l == "ib")
        options.port_type = onchip::sim::DeviceConfig::PortType::kInfiniBand;
      else if (l == "eth")
        options.port_type = onchip::sim::DeviceConfig::PortType::kEthernet;
      else
        return Usage();
    } else {
      return Usage();
    }
  }
  signal(SIGPIPE, SIG_IGN);
  auto server = onchip::simd::Server::Start(options);
  if (!server) {
    std::fprintf(stderr, "onchip simd: %s\n", server.error().describe().c_str());
    return 1;
  }
  g_server = server->get();
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::printf("onchip simd: serving %u function(s) on %s\n", options.functions,
              options.socket_path.c_str());
  std::fflush(stdout);
  (*server)->Run();
  g_server = nullptr;
  server->reset();
  std::printf("onchip simd: stopped\n");
  return 0;
}
