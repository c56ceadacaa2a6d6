#include "driver/bus/simd/simd_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>
#include <optional>
#include <vector>

#include "log/log.h"

namespace onchip::driver::bus::simd {

using onchip::simd::CommandReply;
using onchip::simd::CommandRequest;
using onchip::simd::Frame;
using onchip::simd::HelloReply;
using onchip::simd::HelloRequest;
using onchip::simd::MapDmaRequest;
using onchip::simd::MessageType;
using onchip::simd::SteeringTagReply;
using onchip::simd::SteeringTagRequest;
using onchip::simd::UnmapDmaRequest;
using onchip::simd::UpdateMkeyRequest;

Connection::~Connection() { close(sock_); }

Result<std::shared_ptr<Connection>> Connection::Dial(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path))
    return Fail(EINVAL, "simd: socket path empty or too long");
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return Fail(errno, "simd: socket");
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    close(sock);
    return Fail(e, "simd: no device daemon listens on the socket (tools/onchip sim start)");
  }
  return std::shared_ptr<Connection>(new Connection(sock));
}

void Connection::OnDeath(std::function<void()> lost) {
  std::lock_guard lock(mu_);
  on_death_ = std::move(lost);
}

Result<Frame> Connection::Call(MessageType type,
                               std::initializer_list<std::span<const std::byte>> parts,
                               std::span<const int> fds) {
  std::lock_guard lock(mu_);
  if (dead()) return Fail(EIO, "simd: the device daemon is gone");
  auto fail = [this](const Error& e) -> Result<Frame> {
    // Whatever broke the exchange, the stream is out of step: nothing later can be trusted.
    dead_.store(true, std::memory_order_relaxed);
    shutdown(sock_, SHUT_RDWR);
    if (on_death_) std::exchange(on_death_, nullptr)();
    return Fail(EIO, e.errno_value() == EIO ? "simd: the device daemon closed the connection"
                                            : "simd: the connection to the device daemon broke");
  };
  if (auto sent = onchip::simd::SendFrame(sock_, type, 0, parts, fds); !sent) return fail(sent.error());
  auto reply = onchip::simd::RecvFrame(sock_);
  if (!reply) return fail(reply.error());
  if (reply->header.type != static_cast<uint16_t>(type)) return fail(Error(EPROTO, "reply type"));
  return reply;
}

namespace {

// A reply's status as an error: the errno the daemon gave, and the reason it sent under
// ONCHIP_LOG=debug (the caller's verbs call returns the errno).
Result<void> CheckReply(const Frame& reply, const char* what) {
  if (reply.header.status == 0) return {};
  log::Say(log::Level::kDebug, "onchip simd: %s: %.*s", what, static_cast<int>(reply.payload.size()),
           reinterpret_cast<const char*>(reply.payload.data()));
  return Fail(static_cast<int>(reply.header.status), what);
}

// Memory the application mapped from a file it still holds open (a memfd, a hugetlbfs file): the
// fd and the offset of `host` in it, found by matching /proc/self/maps' device and inode with
// this process's open fds. nullopt for anonymous memory or a file whose fd was closed.
struct Backing {
  int fd;
  uint64_t offset;
};
std::optional<Backing> FindBacking(const void* host, uint64_t length) {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return std::nullopt;
  const auto want = reinterpret_cast<uintptr_t>(host);
  std::optional<Backing> found;
  unsigned long long start, end, offset, inode;
  unsigned major_no, minor_no;
  char line[4096];
  dev_t dev = 0;
  uint64_t file_offset = 0;
  bool matched = false;
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    char perms[8];
    if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &offset,
                    &major_no, &minor_no, &inode) != 7)
      continue;
    if (want < start || want >= end) continue;
    if (inode == 0 || want + length > end) break;
    dev = makedev(major_no, minor_no);
    file_offset = offset + (want - start);
    matched = true;
    break;
  }
  std::fclose(maps);
  if (!matched) return std::nullopt;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  while (dirent* e = readdir(dir)) {
    int fd = -1;
    const char* name = e->d_name;
    if (std::from_chars(name, name + std::strlen(name), fd).ec != std::errc() || fd == dirfd(dir))
      continue;
    struct stat st;
    if (fstat(fd, &st) != 0) continue;
    // Hugetlbfs and memfd report the mapping's device as the file's st_dev.
    if (st.st_ino == inode && st.st_dev == dev) {
      found = Backing{fd, file_offset};
      break;
    }
  }
  closedir(dir);
  return found;
}

class SimdFunction final : public vpci::Function {
 public:
  // `window_fd` is the client's BAR0 window (tools/simd/client_window.h) and `sleep_page` its
  // page that holds the client's sleep word, mapped shared; `clock` goes over the window
  // read-only.
  SimdFunction(std::shared_ptr<Connection> conn, int window_fd, uint64_t bar0_size,
               vpci::ReadOnlyPage clock, std::byte* sleep_page, std::vector<int> interrupt_fds,
               uint16_t vector, std::optional<vpci::TphCapability> tph)
      : conn_(std::move(conn)), window_fd_(window_fd), bar0_size_(bar0_size), clock_(clock),
        sleep_page_(sleep_page), interrupt_fds_(std::move(interrupt_fds)), vector_(vector),
        tph_(tph) {}
  ~SimdFunction() override {
    munmap(sleep_page_, kSleepPageSize);
    close(window_fd_);
    close(clock_.fd);
    for (int fd : interrupt_fds_) close(fd);
  }
  static constexpr uint64_t kSleepPageSize = 4096;
  static constexpr uint64_t kSleepPageOffset = vpci::kEngineSleepWordOffset & ~(kSleepPageSize - 1);

  vpci::SharedMemory bar0() const override { return {window_fd_, bar0_size_}; }
  std::optional<vpci::ReadOnlyPage> bar0_read_only_page() const override { return clock_; }

  Result<void> MapDma(const vpci::DmaRegion& region) override {
    MapDmaRequest req{.iova = region.iova, .length = region.length, .fd_offset = region.fd_offset,
                      .host = reinterpret_cast<uint64_t>(region.host), .has_fd = 0, .reserved = 0};
    int fd = region.fd;
    if (fd < 0) {
      if (auto backing = FindBacking(region.host, region.length)) {
        fd = backing->fd;
        req.fd_offset = backing->offset;
      }
    }
    if (fd >= 0) {
      req.has_fd = 1;
      const int fds[1] = {fd};
      ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kMapDma, {onchip::simd::AsBytes(req)},
                                          std::span<const int>(fds)));
      // EPERM: the daemon cannot seal the file against shrinking (tools/simd/client_file.h), so
      // it would not be safe to map; the same memory is reachable as process memory.
      if (reply.header.status != EPERM) return CheckReply(reply, "map DMA through the device daemon");
      req.has_fd = 0;
      req.fd_offset = 0;
    }
    ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kMapDma, {onchip::simd::AsBytes(req)}));
    return CheckReply(reply, "map DMA through the device daemon");
  }

  Result<void> UnmapDma(uint64_t iova, uint64_t length) override {
    UnmapDmaRequest req{.iova = iova, .length = length};
    ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kUnmapDma, {onchip::simd::AsBytes(req)}));
    return CheckReply(reply, "unmap DMA through the device daemon");
  }

  std::optional<vpci::TphCapability> tph() const override { return tph_; }

  void Kick() override {
    vpci::WakeEngine(reinterpret_cast<uint32_t*>(
        sleep_page_ + (vpci::kEngineSleepWordOffset - kSleepPageOffset)));
  }

  // The client's one vector (the daemon's hello names it); the others are not its to read.
  int InterruptFd(uint16_t vector) const override {
    return vector == vector_ && !interrupt_fds_.empty() ? interrupt_fds_[0] : -1;
  }
  uint16_t CompletionVector() const override { return vector_; }
  int LinkFd() const override { return conn_->fd(); }

 private:
  std::shared_ptr<Connection> conn_;
  int window_fd_;
  uint64_t bar0_size_;
  vpci::ReadOnlyPage clock_;
  std::byte* sleep_page_;
  std::vector<int> interrupt_fds_;  // at most one: the eventfd of vector_
  uint16_t vector_;
  std::optional<vpci::TphCapability> tph_;
};

class SimdCommander final : public cmd::Commander {
 public:
  explicit SimdCommander(std::shared_ptr<Connection> conn) : conn_(std::move(conn)) {}

  Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) override {
    if (in.size() < 8 || out.size() < 8) return Fail(EINVAL, "simd: command shorter than 8 bytes");
    if (in.size() > onchip::simd::kMaxPayload - sizeof(CommandRequest) ||
        out.size() > onchip::simd::kMaxPayload - sizeof(CommandReply))
      return Fail(EINVAL, "simd: command larger than the protocol carries");
    CommandRequest req{.out_length = static_cast<uint32_t>(out.size()),
                       .in_length = static_cast<uint32_t>(in.size())};
    ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kCommand, {onchip::simd::AsBytes(req), in}));
    ONCHIP_CHECK(CheckReply(reply, "command through the device daemon"));
    ONCHIP_TRY(const CommandReply head, onchip::simd::ReadStruct<CommandReply>(reply.payload));
    if (head.delivery_errno != 0) return Fail(static_cast<int>(head.delivery_errno),
                                              "simd: the device daemon refused the command");
    if (head.out_length != out.size() || reply.payload.size() != sizeof(head) + out.size())
      return Fail(EPROTO, "simd: command output of the wrong length");
    std::memcpy(out.data(), reply.payload.data() + sizeof(head), out.size());
    return cmd::CheckOutputStatus(in, out);
  }

 private:
  std::shared_ptr<Connection> conn_;
};

// The daemon's services beyond commands: it owns the function's REG_UMR QP.
class SimdOwner final : public cmd::OwnerChannel {
 public:
  explicit SimdOwner(std::shared_ptr<Connection> conn) : conn_(std::move(conn)) {}

  Result<void> UpdateMkey(uint32_t mkey, const cmd::MkeyUpdate& update) override {
    UpdateMkeyRequest req{.mkey = mkey, .fields = 0, .pdn = update.pdn.value_or(0),
                          .access = update.access.value_or(0)};
    if (update.pdn) req.fields |= onchip::simd::kUpdateMkeyPd;
    if (update.access) req.fields |= onchip::simd::kUpdateMkeyAccess;
    ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kUpdateMkey, {onchip::simd::AsBytes(req)}));
    return CheckReply(reply, "update an MR in place through the device daemon");
  }

  Result<uint8_t> AcquireSteeringTag(uint32_t cpu, uint8_t mem_type) override {
    SteeringTagRequest req{.op = onchip::simd::kSteeringTagAcquire, .cpu = cpu,
                           .mem_type = mem_type, .index = 0, .reserved = 0};
    ONCHIP_TRY(Frame reply, conn_->Call(MessageType::kSteeringTag, {onchip::simd::AsBytes(req)}));
    ONCHIP_CHECK(CheckReply(reply, "a steering tag from the device daemon"));
    ONCHIP_TRY(const SteeringTagReply r, onchip::simd::ReadStruct<SteeringTagReply>(reply.payload));
    return r.index;
  }

  void ReleaseSteeringTag(uint8_t index) override {
    SteeringTagRequest req{.op = onchip::simd::kSteeringTagRelease, .cpu = 0, .mem_type = 0,
                           .index = index, .reserved = 0};
    // A connection that is gone took the reference with it (the daemon released it).
    (void)conn_->Call(MessageType::kSteeringTag, {onchip::simd::AsBytes(req)});
  }

 private:
  std::shared_ptr<Connection> conn_;
};

}  // namespace

Result<Attachment> Attach(std::string_view address) {
  std::string path(address);
  uint32_t function = 0;
  if (const auto hash = address.rfind('#'); hash != std::string_view::npos) {
    const std::string_view num = address.substr(hash + 1);
    if (num.empty() ||
        std::from_chars(num.data(), num.data() + num.size(), function).ec != std::errc() ||
        std::from_chars(num.data(), num.data() + num.size(), function).ptr != num.data() + num.size())
      return Fail(EINVAL, "simd: the function after '#' must be a number");
    path = std::string(address.substr(0, hash));
  }
  ONCHIP_TRY(std::shared_ptr<Connection> conn, Connection::Dial(path));
  HelloRequest hello{.function = function, .pid = static_cast<uint32_t>(getpid())};
  // This process's address space, as handles bound to it: the daemon reaches memory without an
  // fd through them (tools/simd/session.h), never by pid with its own privileges. The kernel
  // binds /proc/self/mem and maps to the address space at open (fs/proc/base.c, proc_mem_open).
  const int space[2] = {open("/proc/self/mem", O_RDWR | O_CLOEXEC),
                        open("/proc/self/maps", O_RDONLY | O_CLOEXEC)};
  const bool have_space = space[0] >= 0 && space[1] >= 0;
  auto reply_or = conn->Call(MessageType::kHello, {onchip::simd::AsBytes(hello)},
                             have_space ? std::span<const int>(space) : std::span<const int>());
  for (int fd : space)
    if (fd >= 0) close(fd);
  ONCHIP_TRY(Frame reply, std::move(reply_or));
  ONCHIP_CHECK(CheckReply(reply, "hello to the device daemon"));
  ONCHIP_TRY(const HelloReply h, onchip::simd::ReadStruct<HelloReply>(reply.payload));
  if (reply.fds.size() != 2u + h.interrupt_vectors || h.interrupt_vectors > 1 ||
      h.bar0_size < SimdFunction::kSleepPageOffset + SimdFunction::kSleepPageSize ||
      h.clock_page_offset % SimdFunction::kSleepPageSize != 0 || h.clock_page_offset >= h.bar0_size)
    return Fail(EPROTO, "simd: hello reply without a BAR0 window, a clock page and interrupt fds");
  const int window_fd = reply.TakeFd(0);
  const vpci::ReadOnlyPage clock{.fd = reply.TakeFd(1), .bar_offset = h.clock_page_offset};
  std::vector<int> interrupts;
  for (std::size_t i = 0; i < h.interrupt_vectors; ++i) interrupts.push_back(reply.TakeFd(2 + i));
  void* sleep_page = mmap(nullptr, SimdFunction::kSleepPageSize, PROT_READ | PROT_WRITE, MAP_SHARED,
                          window_fd, SimdFunction::kSleepPageOffset);
  if (sleep_page == MAP_FAILED) {
    const int err = errno;
    close(window_fd);
    close(clock.fd);
    for (int fd : interrupts) close(fd);
    return Fail(err, "simd: map the window's sleep word");
  }
  std::optional<vpci::TphCapability> tph;
  if (h.tph_st_table_size != 0)
    tph = vpci::TphCapability{.st_table_offset = h.tph_st_table_offset,
                              .st_table_size = h.tph_st_table_size};
  Attachment a;
  a.function = std::make_unique<SimdFunction>(conn, window_fd, h.bar0_size, clock,
                                              static_cast<std::byte*>(sleep_page),
                                              std::move(interrupts), h.interrupt_vector, tph);
  a.commander = std::make_unique<SimdCommander>(conn);
  a.owner = std::make_unique<SimdOwner>(conn);
  a.connection = conn;
  a.iova_base = h.iova_base;
  a.client_id = h.client_id;
  a.uid = h.uid;
  return a;
}

}  // namespace onchip::driver::bus::simd
