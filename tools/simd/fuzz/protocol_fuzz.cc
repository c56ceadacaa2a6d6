#include "tools/simd/fuzz/protocol_fuzz.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "tools/simd/server.h"

namespace onchip::simd::fuzz {
namespace {

constexpr int kReplyTimeoutMs = 5000;

struct Daemon {
  std::unique_ptr<Server> server;
  std::thread thread;
  std::string path;

  Daemon() {
    // Driver memory from 4 KiB memfds: no hugepage reservation and no DPDK in a fuzz process.
    setenv("ONCHIP_ALLOC_TIER", "4k", 0);
    path = "/tmp/onchip-protocol-fuzz-" + std::to_string(getpid()) + ".sock";
    auto started = Server::Start({.socket_path = path, .functions = 2, .engine_idle_period = {}});
    if (!started) {
      std::fprintf(stderr, "protocol_fuzz: the daemon did not start: %s\n",
                   started.error().describe().c_str());
      std::abort();
    }
    server = std::move(*started);
    thread = std::thread([s = server.get()] { s->Run(); });
  }
  ~Daemon() {
    server->Stop();
    thread.join();
  }
};

Daemon& TheDaemon() {
  static Daemon daemon;
  return daemon;
}

int Connect(const std::string& path) {
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) std::abort();
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::perror("protocol_fuzz: connect to the daemon");
    std::abort();
  }
  return s;
}

void SendWithFds(int s, const uint8_t* data, std::size_t size, const std::vector<int>& fds) {
  iovec iov{const_cast<uint8_t*>(data), size};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  if (!fds.empty()) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  // The daemon may close early (a malformed frame): EPIPE is an answer, not a failure.
  (void)sendmsg(s, &m, MSG_NOSIGNAL);
}

// Reads until EOF, closing every fd that arrives. False if the daemon neither replies nor closes.
bool DrainUntilClosed(int s, ProtocolFuzzResult* r) {
  std::vector<std::byte> buf(64 << 10);
  for (;;) {
    pollfd p{s, POLLIN, 0};
    if (poll(&p, 1, kReplyTimeoutMs) != 1) {
      std::fprintf(stderr, "protocol_fuzz: the daemon neither answered nor closed within %d ms\n",
                   kReplyTimeoutMs);
      return false;
    }
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      r->closed_by_daemon = true;
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::fprintf(stderr, "protocol_fuzz: reading the daemon's replies: %s\n", std::strerror(errno));
      return false;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        close(fd);
      }
    }
    ++r->replies;  // bytes of one or more replies
  }
}

}  // namespace

std::string DaemonStatus() {
  const int s = Connect(TheDaemon().path);
  FrameHeader h;
  h.type = static_cast<uint16_t>(MessageType::kStatus);
  (void)send(s, &h, sizeof h, MSG_NOSIGNAL);
  auto reply = RecvFrame(s);
  close(s);
  if (!reply || reply->header.status != 0) return {};
  return std::string(reinterpret_cast<const char*>(reply->payload.data()), reply->payload.size());
}

ProtocolFuzzResult FuzzProtocol(const uint8_t* data, std::size_t size) {
  Daemon& daemon = TheDaemon();
  ProtocolFuzzResult r;
  const uint8_t fd_mode = size > 0 ? data[0] : 0;
  const uint8_t split = size > 1 ? data[1] : 0;
  const uint8_t* bytes = data + std::min<std::size_t>(size, 2);
  const std::size_t len = size - std::min<std::size_t>(size, 2);

  std::vector<int> fds;
  if (fd_mode == 1 || fd_mode == 3) {
    const int m = memfd_create("protocol_fuzz", MFD_CLOEXEC);
    if (m >= 0 && ftruncate(m, 64 << 10) == 0) fds.push_back(m);
    else if (m >= 0) close(m);
  }
  if (fd_mode == 2 || fd_mode == 3) {
    const int e = eventfd(0, EFD_CLOEXEC);
    if (e >= 0) fds.push_back(e);
  }

  const int s = Connect(daemon.path);
  const std::size_t first = len * split / 256;
  SendWithFds(s, bytes, first, fds);
  if (len > first) SendWithFds(s, bytes + first, len - first, {});
  for (int fd : fds) close(fd);
  shutdown(s, SHUT_WR);
  if (!DrainUntilClosed(s, &r)) std::abort();
  close(s);
  return r;
}

}  // namespace onchip::simd::fuzz
