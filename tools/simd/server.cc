#include "tools/simd/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "driver/open.h"

namespace onchip::simd {

std::string DefaultSocketPath() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir = (xdg != nullptr && *xdg != '\0') ? std::string(xdg) : "/run";
  return dir + "/onchip/simd.sock";
}

sim::DeviceConfig FunctionConfig(uint32_t index) { return sim::NthDevice({}, index); }

namespace {

constexpr std::chrono::milliseconds kIdlePollPeriod{20};
// How long the accept loop waits when the process is out of descriptors.
constexpr std::chrono::milliseconds kAcceptBackoff{100};

// `group`: the --group the daemon also serves; the socket (and a directory made here) belong to
// it, as /dev/infiniband's nodes belong to the rdma group.
Result<int> Listen(const std::string& path, std::optional<gid_t> group) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return Fail(EINVAL, "simd: socket path empty or too long");
  std::memcpy(addr.sun_path, path.data(), path.size());
  // The directory, mode 0700 when we make it (0750 of the group with --group): the socket is as
  // private as its directory.
  if (const auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    for (std::size_t i = 1; i <= dir.size(); ++i) {
      if (i != dir.size() && dir[i] != '/') continue;
      const std::string part = dir.substr(0, i);
      if (mkdir(part.c_str(), group ? 0750 : 0700) == 0 && group &&
          chown(part.c_str(), static_cast<uid_t>(-1), *group) != 0)
        return Fail(errno, "simd: chown of the socket's directory to the group");
    }
  }
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return Fail(errno, "simd: socket");
  const bool answered = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(probe);
  if (answered) return Fail(EADDRINUSE, "simd: a daemon already serves this socket");
  // A stale socket of a daemon that died is replaced; any other file at the path is left alone.
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Fail(EEXIST, "simd: the path exists and is not a socket");
    unlink(path.c_str());
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Fail(errno, "simd: socket");
  // connect() needs write permission on the socket file: 0660 lets the daemon's user and group
  // in and nobody else, whatever the umask made of it (credentials are checked again at accept).
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(path.c_str(), 0660) != 0 ||
      (group && chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) ||
      listen(fd, 64) != 0) {
    const int e = errno;
    close(fd);
    return Fail(e, "simd: bind, chmod, chown or listen on the socket");
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  if (options.functions == 0 || options.functions > 8)
    return Fail(EINVAL, "simd: serve 1 to 8 functions");
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  // One device thread for every function: each function's own thread would be one more spinner
  // while clients post (two clients busy-polling their CQs and two engines on a two-core machine
  // cost an order of magnitude in round-trip latency), and a packet one function sends another
  // is then taken by the same thread without a hand-off.
  ONCHIP_TRY(std::shared_ptr<sim::DeviceThread> thread, sim::DeviceThread::Create());
  for (uint32_t i = 0; i < options.functions; ++i) {
    auto f = std::make_unique<ServedFunction>();
    f->index = i;
    sim::DeviceConfig config = FunctionConfig(i);
    // A daemon idles for hours: with nothing rung, the device thread looks at every function's
    // doorbells every kIdlePollPeriod (their internal timers and health counters advance at that
    // step while idle). Every doorbell of the driver still kicks the sleeping thread at once, so
    // this costs no latency, and an idle daemon stays well under 1% of a core.
    config.idle_poll_period = kIdlePollPeriod;
    if (options.engine_idle_period) config.engine_idle_period = *options.engine_idle_period;
    config.engine_spin = options.engine_spin;
    config.engine_sched = options.engine_sched;
    config.port_type = options.port_type;
    ONCHIP_TRY(f->device, sim::Device::Create(config, thread));
    f->memic_pages = std::make_unique<MemicPages>(f->device->layout().memic_start,
                                                  f->device->layout().memic_size);
    ONCHIP_TRY(f->driver, driver::Open(driver::Locator::Of(*f->device)));
    s->functions_.push_back(std::move(f));
  }
  if (pipe2(s->stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return Fail(errno, "simd: pipe");
  ONCHIP_TRY(s->listen_fd_, Listen(options.socket_path, options.group));
  return s;
}

Server::~Server() {
  Reap(true);
  for (auto& f : functions_) {
    if (f->driver) {
      const auto report = f->driver->Close();
      if (report.objects() != 0 || report.first_error)
        std::fprintf(stderr, "onchip simd: function %u: %s\n", f->index, report.describe().c_str());
      f->driver.reset();
    }
    f->device.reset();
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(options_.socket_path.c_str());
  }
  for (int fd : stop_pipe_)
    if (fd >= 0) close(fd);
}

void Server::Stop() {
  const char b = 1;
  (void)!write(stop_pipe_[1], &b, 1);
}

void Server::Reap(bool all) {
  std::list<Client> done;
  {
    std::lock_guard lock(mu_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (all) it->session->Shutdown();
      if (all || it->session->finished()) {
        done.splice(done.end(), clients_, it++);
      } else {
        ++it;
      }
    }
  }
  for (Client& c : done) c.thread.join();
}

void Server::Run() {
  for (;;) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    // Wake now and then to join the threads of clients that left.
    const int n = poll(p, 2, 1000);
    if (n < 0 && errno != EINTR) break;
    if ((p[1].revents & POLLIN) != 0) break;
    Reap(false);
    if ((p[0].revents & POLLIN) == 0) continue;
    const int sock = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (sock >= 0) {
      Admit(sock);
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      // Out of descriptors or memory: the pending connection stays queued, and accepting again
      // at once would spin. Wait for clients to leave (or for Stop).
      std::fprintf(stderr, "onchip simd: accept: %s; retrying in %lld ms\n", std::strerror(errno),
                   static_cast<long long>(kAcceptBackoff.count()));
      pollfd stop = {stop_pipe_[0], POLLIN, 0};
      if (poll(&stop, 1, static_cast<int>(kAcceptBackoff.count())) > 0) break;
    }
  }
  Reap(true);
}

void Server::Admit(int sock) {
  std::optional<Session::Refusal> refusal;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    refusal = Session::Refusal{EACCES, "the daemon cannot see who you are (SO_PEERCRED)"};
  } else if (cred.uid != geteuid() && cred.uid != 0 &&
             !(options_.group && cred.gid == *options_.group)) {
    // As the kernel lets a process open /dev/infiniband/uverbsN by the node's owner and group:
    // the daemon's own user, root, or the configured group.
    std::fprintf(stderr, "onchip simd: refused pid %d (uid %u): not the daemon's user or group\n",
                 static_cast<int>(cred.pid), static_cast<unsigned>(cred.uid));
    refusal = Session::Refusal{EACCES,
                               "this daemon serves its own user and group only (onchip-simd --group)"};
  }
  std::vector<ServedFunction*> functions;
  for (auto& f : functions_) functions.push_back(f.get());
  std::lock_guard lock(mu_);
  // A refused connection still gets a session: it reads the client's first frame (within the
  // hello timeout) and answers it with the reason, so the client sees why, not a broken pipe.
  // Past twice the cap a connection is closed unanswered: a flood costs no thread.
  if (clients_.size() >= 2 * uint64_t{options_.max_clients}) {
    close(sock);
    return;
  }
  if (!refusal && served_clients() >= options_.max_clients)
    refusal = Session::Refusal{EUSERS,
                               "the daemon serves as many clients as it may (onchip-simd --max-clients)"};
  // A uid names a client's objects and memory to the firmware: never one a session still holds
  // (after 65535 connections the 16-bit tags come round again).
  auto uid_taken = [&](uint32_t id) {
    return std::any_of(clients_.begin(), clients_.end(), [&](const Client& c) {
      return c.session->uid() == Session::UidFor(id);
    });
  };
  while (uid_taken(next_id_)) ++next_id_;
  Client& c = clients_.emplace_back();
  c.session = std::make_unique<Session>(sock, next_id_++, std::move(functions),
                                        [this] { return StatusJson(); }, options_.hello_timeout,
                                        options_.quota, refusal);
  c.thread = std::thread([s = c.session.get()] { s->Run(); });
}

std::size_t Server::served_clients() const {
  std::size_t n = 0;
  // A finished session serves nobody, though its thread waits to be joined for up to a poll
  // period (Reap): it does not count against the cap.
  for (const Client& c : clients_) n += c.session->refused() || c.session->finished() ? 0 : 1;
  return n;
}

std::string Server::StatusJson() const {
  std::string s = "{\"pid\": " + std::to_string(getpid()) + ", \"socket\": \"" +
                  options_.socket_path + "\", \"functions\": [";
  for (std::size_t i = 0; i < functions_.size(); ++i) {
    const ServedFunction& f = *functions_[i];
    const sim::Counters c = f.device->counters();
    const auto& cfg = f.device->config();
    char mac[18];
    std::snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", cfg.mac[0], cfg.mac[1],
                  cfg.mac[2], cfg.mac[3], cfg.mac[4], cfg.mac[5]);
    char ip[16];
    std::snprintf(ip, sizeof(ip), "%u.%u.%u.%u", cfg.ipv4 >> 24, (cfg.ipv4 >> 16) & 0xff,
                  (cfg.ipv4 >> 8) & 0xff, cfg.ipv4 & 0xff);
    s += std::string(i ? ", " : "") + "{\"index\": " + std::to_string(f.index) + ", \"mac\": \"" +
         mac + "\", \"ipv4\": \"" + ip + "\", \"link_layer\": \"" +
         (cfg.port_type == sim::DeviceConfig::PortType::kInfiniBand ? "InfiniBand" : "Ethernet") +
         "\", \"lid\": " + std::to_string(cfg.lid) + ", \"sm_lid\": " +
         std::to_string(cfg.port_type == sim::DeviceConfig::PortType::kInfiniBand ? sim::Fabric::kSmLid : 0) +
         ", \"uars\": " + std::to_string(c.uars) +
         ", \"pds\": " + std::to_string(c.pds) + ", \"mkeys\": " + std::to_string(c.mkeys) +
         ", \"eqs\": " + std::to_string(c.eqs) + ", \"cqs\": " + std::to_string(c.cqs) +
         ", \"qps\": " + std::to_string(c.qps) + ", \"srqs\": " + std::to_string(c.srqs) +
         ", \"memic_allocations\": " + std::to_string(c.memic_allocations) +
         ", \"dma_mappings\": " + std::to_string(f.device->dma_mappings()) +
         ", \"commands\": " + std::to_string(c.commands) + "}";
  }
  s += "], \"clients\": [";
  {
    std::lock_guard lock(mu_);
    bool first = true;
    for (const Client& c : clients_) {
      std::string d = c.session->DescribeJson();
      if (d.empty() || c.session->finished()) continue;
      s += (first ? "" : ", ") + d;
      first = false;
    }
  }
  return s + "]}\n";
}

}  // namespace onchip::simd
