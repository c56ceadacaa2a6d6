// A device daemon (tools/simd) as a test drives it: the daemon as a child process on a socket of
// its own, and one client's verbs objects on one of its functions (PD, CQ, an MR over memory the
// daemon reaches, RC QPs), with the RC connect and a signaled RDMA write the tests share.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "driver/device.h"
#include "driver/open.h"
#include "driver/rings/data_path.h"
#include "driver/verbs/calls.h"
#include "tools/testing/rc_connect.h"
#include "tests/device/wait.h"
#include "tools/sim/wire.h"
#include "tools/simd/server.h"

extern char** environ;

namespace onchip::testing::simd_client {

namespace v = driver::verbs;
namespace rings = driver::rings;

// The daemon as a child process on a socket of its own: `name`.sock in a new directory under
// /tmp, removed with the daemon. (A pid does not make the path unique: a sandboxed test sees the
// same pid in every run of it, and the runs share /tmp. A unix socket's path must be short, so
// not under TEST_TMPDIR.)
class Daemon {
 public:
  explicit Daemon(const std::string& name, std::vector<std::string> extra_args = {})
      : extra_args_(std::move(extra_args)) {
    std::string dir = "/tmp/onchip-" + name + "-XXXXXX";
    if (mkdtemp(dir.data()) != nullptr) {
      dir_ = dir;
      socket_ = dir + "/" + name + ".sock";
    }
  }
  ~Daemon() {
    Kill(SIGTERM);
    if (dir_.empty()) return;
    unlink(socket_.c_str());
    rmdir(dir_.c_str());
  }

  bool Start() {
    if (socket_.empty()) return false;  // no directory for it
    std::vector<const char*> argv = {"tools/simd/onchip-simd", "--socket", socket_.c_str()};
    for (const std::string& a : extra_args_) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, const_cast<char**>(argv.data()), environ) != 0)
      return false;
    return WaitUntil([&] { return Answers(); });
  }
  pid_t pid() const { return pid_; }
  bool Answers() const {
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_.c_str(), sizeof(a.sun_path) - 1);
    const bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(s);
    return ok;
  }
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // The daemon's state (kStatus), or "" when it does not answer.
  std::string Status() const {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_.c_str(), sizeof(a.sun_path) - 1);
    std::string text;
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        simd::SendFrame(s, simd::MessageType::kStatus, 0, {})) {
      if (auto f = simd::RecvFrame(s); f && f->header.status == 0)
        text.assign(reinterpret_cast<const char*>(f->payload.data()), f->payload.size());
    }
    close(s);
    return text;
  }
  const std::string& socket() const { return socket_; }
  std::string locator(int function) const {
    return "simd:" + socket_ + "#" + std::to_string(function);
  }

 private:
  std::string dir_;
  std::string socket_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
};

inline std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Memory the daemon reaches: mapped from a memfd this process keeps open (the daemon maps the
// same pages), or anonymous (the daemon reaches it with process_vm_readv/writev).
struct SharedBuffer {
  explicit SharedBuffer(std::size_t n, bool anonymous = false) : size(n) {
    if (anonymous) {
      data = static_cast<uint8_t*>(
          mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      return;
    }
    fd = memfd_create("simd-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(n)), 0);
    data = static_cast<uint8_t*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~SharedBuffer() {
    munmap(data, size);
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  std::size_t size;
  uint8_t* data;
};

// One client's verbs objects on one function: PD, CQ, an fd-backed MR, RC QPs.
struct Endpoint {
  std::shared_ptr<driver::Device> device;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  std::unique_ptr<SharedBuffer> buf;
  std::vector<ibv_qp*> qps;
  ibv_gid gid{};

  bool Open(const std::string& locator, int function, bool anonymous = false) {
    auto d = driver::Open(locator);
    EXPECT_TRUE(d) << d.error().describe();
    if (!d) return false;
    device = *d;
    ibv_context* ctx = device->verbs();
    pd = v::alloc_pd(ctx);
    cq = v::create_cq(ctx, 64, nullptr, 0);
    buf = std::make_unique<SharedBuffer>(1 << 16, anonymous);
    if (pd == nullptr || cq == nullptr) return false;
    mr = v::reg_mr(pd, buf->data, buf->size, reinterpret_cast<uintptr_t>(buf->data),
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    EXPECT_NE(mr, nullptr) << strerror(errno);
    const auto gids = sim::DeviceGids(simd::FunctionConfig(static_cast<uint32_t>(function)));
    std::memcpy(gid.raw, gids[2].data(), 16);  // RoCE v2, IPv4-mapped
    return mr != nullptr;
  }
  ibv_qp* Rc() {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 16;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    ibv_qp* qp = v::create_qp(pd, &a);
    EXPECT_NE(qp, nullptr) << strerror(errno);
    if (qp) qps.push_back(qp);
    return qp;
  }
  void Close() {
    for (ibv_qp* qp : qps) EXPECT_EQ(v::destroy_qp(qp), 0);
    qps.clear();
    if (mr) {
      EXPECT_EQ(v::dereg_mr(mr), 0);
    }
    if (cq) {
      EXPECT_EQ(v::destroy_cq(cq), 0);
    }
    if (pd) {
      EXPECT_EQ(v::dealloc_pd(pd), 0);
    }
    mr = nullptr;
    cq = nullptr;
    pd = nullptr;
    if (device) device->Close();
    device.reset();
  }
};

// RESET -> INIT -> RTR -> RTS towards `dest` on the peer with GID `dgid`.
inline bool Connect(ibv_qp* qp, uint32_t dest, const ibv_gid& dgid) {
  return bool(testing::ConnectRc(qp, dest, {.dgid = dgid}));
}

// An RDMA write of `len` bytes from `from`'s buffer at `off` to `remote` under `rkey`, signaled;
// true once its completion says success (false with the completion's status in `status`).
inline bool WriteTo(Endpoint& from, ibv_qp* qp, std::size_t off, const void* remote,
                    uint32_t rkey, uint32_t len, ibv_wc_status* status = nullptr) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(from.buf->data + off), len, from.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = off;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(remote);
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (rings::PostSend(qp, &wr, &bad) != 0) return false;
  ibv_wc wc{};
  int got = 0;
  const bool done = WaitUntil([&] {
    got = rings::PollCq(from.cq, 1, &wc);
    return got != 0;
  });
  if (status != nullptr && got == 1) *status = wc.status;
  return done && got == 1 && wc.status == IBV_WC_SUCCESS;
}

// The same at offset `off` of `to`'s buffer, under its MR.
inline bool Write(Endpoint& from, ibv_qp* qp, Endpoint& to, std::size_t off, uint32_t len) {
  return WriteTo(from, qp, off, to.buf->data + off, to.mr->rkey, len);
}

// Two RC QPs of `e` connected to each other (a loopback pair); {nullptr, nullptr} on failure.
inline std::pair<ibv_qp*, ibv_qp*> LoopbackPair(Endpoint& e) {
  ibv_qp* a = e.Rc();
  ibv_qp* b = e.Rc();
  if (!a || !b || !Connect(a, b->qp_num, e.gid) || !Connect(b, a->qp_num, e.gid)) return {};
  return {a, b};
}

}  // namespace onchip::testing::simd_client
