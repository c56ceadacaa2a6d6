#include "tools/simd/session.h"

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "driver/cmd/owner_channel.h"
#include "driver/steering_tags.h"
#include "tools/simd/client_file.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/field.h"
#include "uapi/verbs/dmah.h"

namespace onchip::simd {

Session::Session(int sock, uint32_t id, std::vector<ServedFunction*> functions,
                 std::function<std::string()> status, std::chrono::milliseconds hello_timeout,
                 const Quota& quota, std::optional<Refusal> refusal)
    : sock_(sock),
      id_(id),
      functions_(std::move(functions)),
      status_(std::move(status)),
      hello_timeout_(hello_timeout),
      quota_(quota),
      refusal_(refusal) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    pid_ = cred.pid;
    user_ = cred.uid;
  }
  uid_ = UidFor(id_);
}

Session::~Session() { close(sock_); }

void Session::Shutdown() { shutdown(sock_, SHUT_RDWR); }

Result<void> Session::Reply(MessageType type, uint32_t status, std::span<const std::byte> a,
                            std::span<const std::byte> b, std::span<const int> fds) {
  return SendFrame(sock_, type, status, {a, b}, fds);
}

Result<void> Session::Refuse(MessageType type, int errno_value, const char* why) {
  return Reply(type, static_cast<uint32_t>(errno_value),
               std::as_bytes(std::span<const char>(why, std::strlen(why))));
}

namespace {

// A receive timeout on the socket (0: none).
void SetReceiveTimeout(int sock, std::chrono::milliseconds t) {
  timeval tv{.tv_sec = static_cast<time_t>(t.count() / 1000),
             .tv_usec = static_cast<suseconds_t>(t.count() % 1000 * 1000)};
  (void)setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

// What the client may have mapped for the device at once, as the kernel's ib_umem_get
// (drivers/infiniband/core/umem.c) charges pinned pages: its RLIMIT_MEMLOCK, unlimited with
// CAP_IPC_LOCK. When the client's limit cannot be read, the daemon's own applies.
uint64_t MemlockLimit(pid_t pid) {
  if (std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "re")) {
    char line[256];
    unsigned long long caps = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr)
      found = std::sscanf(line, "CapEff: %llx", &caps) == 1;
    std::fclose(f);
    constexpr int kCapIpcLock = 14;  // linux/capability.h
    if (found && ((caps >> kCapIpcLock) & 1)) return UINT64_MAX;
  }
  rlimit r{};
  if (prlimit(pid, RLIMIT_MEMLOCK, nullptr, &r) != 0 && getrlimit(RLIMIT_MEMLOCK, &r) != 0) return 0;
  return r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur;
}

}  // namespace

void Session::Run() {
  SetReceiveTimeout(sock_, hello_timeout_);
  for (bool first = true;; first = false) {
    auto frame = RecvFrame(sock_);
    if (!frame) {
      // EOF is a client leaving; anything else is a client that broke the protocol (or sent
      // nothing in time): tell it (it may still read) and treat it as gone.
      const int e = frame.error().errno_value();
      if (e == EAGAIN || e == EWOULDBLOCK)
        (void)Refuse(MessageType::kHello, ETIMEDOUT, "no hello in time");
      else if (e != EIO)
        (void)Refuse(MessageType::kHello, EPROTO, frame.error().what());
      break;
    }
    if (first && refusal_) {
      (void)Refuse(frame->type(), refusal_->errno_value, refusal_->why);
      break;
    }
    if (auto served = Serve(*frame); !served) break;
    if (first) SetReceiveTimeout(sock_, std::chrono::milliseconds(0));
  }
  Release();
  // The client sees the connection end now, with everything it owned already released; the fd
  // itself closes when the server reaps the session.
  shutdown(sock_, SHUT_RDWR);
  finished_.store(true);
}

Result<void> Session::Serve(const Frame& frame) {
  const auto type = frame.type();
  if (function_ == nullptr && type != MessageType::kHello && type != MessageType::kStatus) {
    (void)Refuse(type, EPROTO, "the first message must be hello or status");
    return Fail(EPROTO, "simd: message before hello");
  }
  switch (type) {
    case MessageType::kHello: return Hello(frame);
    case MessageType::kCommand: return Command(frame);
    case MessageType::kMapDma: return MapDma(const_cast<Frame&>(frame));
    case MessageType::kUnmapDma: return UnmapDma(frame);
    case MessageType::kUpdateMkey: return UpdateMkey(frame);
    case MessageType::kSteeringTag: return SteeringTag(frame);
    case MessageType::kStatus: {
      // The status names every client's pid, user and objects: it is for the daemon's own user
      // (and root), not for the members of a --group it also serves.
      if (user_ != 0 && user_ != geteuid()) {
        (void)Refuse(type, EACCES, "the daemon's status is for its own user");
        return Fail(EACCES, "simd: status refused");
      }
      const std::string text = status_();
      ONCHIP_CHECK(Reply(type, 0, std::as_bytes(std::span<const char>(text.data(), text.size()))));
      return Fail(ECONNRESET, "simd: status answered");  // one status per connection
    }
  }
  (void)Refuse(type, EPROTO, "unknown message type");
  return Fail(EPROTO, "simd: unknown message type");
}

Result<void> Session::Hello(const Frame& frame) {
  if (function_ != nullptr) {
    (void)Refuse(MessageType::kHello, EPROTO, "hello twice");
    return Fail(EPROTO, "simd: hello twice");
  }
  auto req = ReadStruct<HelloRequest>(frame.payload);
  if (!req || (frame.fds.size() != 0 && frame.fds.size() != 2)) {
    (void)Refuse(MessageType::kHello, EPROTO, "malformed hello");
    return Fail(EPROTO, "simd: malformed hello");
  }
  if (req->function >= functions_.size()) {
    (void)Refuse(MessageType::kHello, ENODEV, "the daemon serves no such function");
    return Fail(ENODEV, "simd: no such function");
  }
  if (frame.fds.size() == 2) {
    Frame& handles = const_cast<Frame&>(frame);
    const int mem = handles.TakeFd(0), maps = handles.TakeFd(1);
    auto file = sim::ProcessFile::Adopt(mem, maps, pid_);
    if (!file) return Refuse(MessageType::kHello, file.error().errno_value(), file.error().what());
    memory_ = std::move(*file);
  }
  memlock_limit_ = MemlockLimit(pid_);
  ServedFunction& f = *functions_[req->function];
  auto window = ClientWindow::Create(*f.device, *f.memic_pages, id_);
  if (!window) return Refuse(MessageType::kHello, window.error().errno_value(), window.error().what());
  HelloReply reply;
  reply.bar0_size = (*window)->size();
  reply.iova_base = IovaBase(id_);
  reply.iova_size = uint64_t{1} << kIovaWindowBits;
  reply.uid = uid_;
  reply.functions = static_cast<uint16_t>(functions_.size());
  reply.client_id = id_;
  reply.clock_page_offset = sim::Bar0::kClockPageOffset;
  std::vector<int> fds = {(*window)->fd(), f.device->bar().clock_fd()};
  // Its own interrupt vector, if one is free: only that eventfd goes to the client.
  const std::optional<uint16_t> vector = f.TakeVector();
  if (vector && f.device->InterruptFd(*vector) >= 0) {
    fds.push_back(f.device->InterruptFd(*vector));
    reply.interrupt_vector = *vector;
  } else if (vector) {
    f.GiveBackVector(*vector);
  }
  reply.interrupt_vectors = static_cast<uint16_t>(fds.size() - 2);
  {
    std::lock_guard lock(mu_);
    function_ = &f;
    window_ = std::move(*window);
    vector_ = reply.interrupt_vectors ? std::optional<uint16_t>(reply.interrupt_vector) : std::nullopt;
  }
  return Reply(MessageType::kHello, 0, AsBytes(reply), {}, fds);
}

Result<void> Session::Command(const Frame& frame) {
  auto req = ReadStruct<CommandRequest>(frame.payload);
  if (!req || frame.payload.size() != sizeof(CommandRequest) + req->in_length ||
      req->in_length < 16 || req->out_length < 16 ||
      req->out_length > kMaxPayload - sizeof(CommandReply) || !frame.fds.empty()) {
    (void)Refuse(MessageType::kCommand, EPROTO, "malformed command");
    return Fail(EPROTO, "simd: malformed command");
  }
  std::vector<std::byte> in(frame.payload.begin() + sizeof(CommandRequest), frame.payload.end());
  const auto opcode = static_cast<uint16_t>(prm::Get(std::span<const std::byte>(in),
                                                     prm::mbox_in::opcode));
  CommandReply head{.delivery_errno = 0, .out_length = req->out_length};
  std::vector<std::byte> out(req->out_length);
  auto refuse = [&](int e) {
    head.delivery_errno = static_cast<uint32_t>(e);
    return Reply(MessageType::kCommand, 0, AsBytes(head), out);
  };
  if (!UserMayIssue(opcode)) return refuse(EPERM);
  // A client's EQs interrupt on its own vector (vector 0 when it has none: nobody reads it).
  if (opcode == prm::CREATE_EQ &&
      prm::Get(std::span<const std::byte>(in), prm::create_eq_in::eq_context_entry.intr) !=
          vector_.value_or(0)) {
    std::fprintf(stderr, "onchip simd: client %u: CREATE_EQ on another client's vector\n", id_);
    return refuse(EPERM);
  }
  // A MEMIC allocation's pages are checked, allocated and taken as one step (memic_pages.h).
  std::unique_lock memic_lock(function_->memic_pages->mutex(), std::defer_lock);
  if (opcode == prm::ALLOC_MEMIC || opcode == prm::DEALLOC_MEMIC) memic_lock.lock();
  {
    std::lock_guard lock(mu_);
    if (const char* why = owned_.Refusal(in); why != nullptr) {
      std::fprintf(stderr, "onchip simd: client %u: %s\n", id_, why);
      return refuse(EPERM);
    }
    // A MEMIC range with another client's pages is busy, as a range the firmware finds full:
    // the client's allocator tries its next candidate (driver/memic.cc, MemicAllocator::Alloc).
    if (window_->Refusal(in) != nullptr) return refuse(EAGAIN);
    if (const char* why = OverQuota(quota_, owned_, in); why != nullptr) {
      std::fprintf(stderr, "onchip simd: client %u: %s\n", id_, why);
      return refuse(EAGAIN);
    }
  }
  prm::Bits(std::span<std::byte>(in)).set(prm::mbox_in::uid, CarriesUid(opcode) ? uid_ : 0);
  auto done = function_->driver->commander().Exec(in, out);
  if (!done && !done.error().from_firmware()) return refuse(done.error().errno_value());
  if (done) {
    std::lock_guard lock(mu_);
    owned_.Note(in, out);
    window_->AfterCommand(in, out);
  }
  return Reply(MessageType::kCommand, 0, AsBytes(head), out);
}

// The kernel's rereg_user_mr for a client: the daemon's own REG_UMR QP changes the PD or the
// access of an MR the client created, so its keys stay. The firmware checks the rest (the MR
// allows UMR, the new PD has the MR's uid).
Result<void> Session::UpdateMkey(const Frame& frame) {
  constexpr uint32_t kFields = kUpdateMkeyPd | kUpdateMkeyAccess;
  constexpr uint32_t kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  auto req = ReadStruct<UpdateMkeyRequest>(frame.payload);
  if (!req || frame.payload.size() != sizeof(UpdateMkeyRequest) || !frame.fds.empty() ||
      req->fields == 0 || (req->fields & ~kFields) != 0) {
    (void)Refuse(MessageType::kUpdateMkey, EPROTO, "malformed MR update");
    return Fail(EPROTO, "simd: malformed MR update");
  }
  {
    std::lock_guard lock(mu_);
    if (!owned_.Owns(ObjectKind::kMkey, req->mkey >> 8))
      return Refuse(MessageType::kUpdateMkey, EPERM, "the MR is not this client's");
    if ((req->fields & kUpdateMkeyPd) && !owned_.Owns(ObjectKind::kPd, req->pdn))
      return Refuse(MessageType::kUpdateMkey, EPERM, "the PD is not this client's");
  }
  if ((req->fields & kUpdateMkeyAccess) && (req->access & ~kAccess) != 0)
    return Refuse(MessageType::kUpdateMkey, EINVAL, "access bits a UMR cannot set");
  driver::cmd::MkeyUpdate update;
  if (req->fields & kUpdateMkeyPd) update.pdn = req->pdn;
  if (req->fields & kUpdateMkeyAccess) update.access = req->access;
  if (auto done = function_->driver->UpdateMkeyInPlace(req->mkey, update); !done)
    return Refuse(MessageType::kUpdateMkey, done.error().errno_value(), done.error().what());
  return Reply(MessageType::kUpdateMkey, 0);
}

// mlx5_st_alloc_index and mlx5_st_dealloc_index for a client: the entries of the function's ST
// table are the daemon's to program (its driver's SteeringTagTable); the client holds references.
Result<void> Session::SteeringTag(const Frame& frame) {
  auto req = ReadStruct<SteeringTagRequest>(frame.payload);
  if (!req || frame.payload.size() != sizeof(SteeringTagRequest) || !frame.fds.empty() ||
      (req->op != kSteeringTagAcquire && req->op != kSteeringTagRelease)) {
    (void)Refuse(MessageType::kSteeringTag, EPROTO, "malformed steering-tag request");
    return Fail(EPROTO, "simd: malformed steering-tag request");
  }
  driver::SteeringTagTable& table = function_->driver->steering_tags();
  std::lock_guard lock(mu_);
  if (req->op == kSteeringTagRelease) {
    auto it = steering_tags_.find(req->index);
    if (it == steering_tags_.end())
      return Refuse(MessageType::kSteeringTag, ENOENT, "the client holds no such steering tag");
    table.Release(req->index);
    if (--it->second == 0) steering_tags_.erase(it);
    return Reply(MessageType::kSteeringTag, 0);
  }
  if (req->mem_type > IBV_TPH_MEM_TYPE_PM)
    return Refuse(MessageType::kSteeringTag, EINVAL, "unknown tph_mem_type");
  auto index = table.Acquire(req->cpu, req->mem_type);
  if (!index) return Refuse(MessageType::kSteeringTag, index.error().errno_value(), index.error().what());
  if (!steering_tags_.contains(*index) && steering_tags_.size() >= quota_.steering_tags) {
    table.Release(*index);
    return Refuse(MessageType::kSteeringTag, EAGAIN,
                  "the client holds as many steering tags as its quota allows (onchip-simd --quota)");
  }
  ++steering_tags_[*index];
  SteeringTagReply reply{.index = *index, .reserved = {}};
  return Reply(MessageType::kSteeringTag, 0, AsBytes(reply));
}

Result<void> Session::MapDma(Frame& frame) {
  auto req = ReadStruct<MapDmaRequest>(frame.payload);
  if (!req || frame.fds.size() != (req->has_fd != 0 ? 1u : 0u)) {
    (void)Refuse(MessageType::kMapDma, EPROTO, "malformed DMA map");
    return Fail(EPROTO, "simd: malformed map");
  }
  const uint64_t base = IovaBase(id_), end = base + (uint64_t{1} << kIovaWindowBits);
  if (req->length == 0 || req->length % 4096 != 0 || req->iova % 4096 != 0 ||
      req->fd_offset % 4096 != 0 || req->iova < base || req->iova > end ||
      req->length > end - req->iova)
    return Refuse(MessageType::kMapDma, EINVAL,
                  "DMA map outside the client's IOVA window or not whole 4 KiB pages");
  {
    std::lock_guard lock(mu_);
    if (mappings_.size() >= quota_.mappings)
      return Refuse(MessageType::kMapDma, ENOMEM,
                    "the client holds as many DMA mappings as its quota allows (onchip-simd --quota)");
    if (req->length > memlock_limit_ || mapped_bytes_ > memlock_limit_ - req->length)
      return Refuse(MessageType::kMapDma, ENOMEM,
                    "the client's RLIMIT_MEMLOCK does not cover this much mapped memory "
                    "(ulimit -l, or CAP_IPC_LOCK)");
  }
  if (req->has_fd == 0) {
    // Memory without an fd (malloc'd, stack, anonymous mmap): the device reaches it in the
    // client's address space through the handles the client gave at hello (its own
    // /proc/self/mem and maps), as the kernel's IOMMU reaches pinned pages; never by pid.
    if (memory_ == nullptr)
      return Refuse(MessageType::kMapDma, EPERM,
                    "the client gave no address-space handles at hello: only fd-backed memory maps");
    if (auto mapped = function_->device->MapProcessDma(req->iova, req->length, memory_, req->host, uid_);
        !mapped)
      return Refuse(MessageType::kMapDma, mapped.error().errno_value(),
                    mapped.error().describe().c_str());
    std::lock_guard lock(mu_);
    mappings_[req->iova] = Mapping{req->length, nullptr};
    mapped_bytes_ += req->length;
    return Reply(MessageType::kMapDma, 0);
  }
  const int fd = frame.TakeFd(0);
  // Its own user and root may signal the daemon (kill(2)'s permission rule).
  const bool may_signal = user_ == 0 || user_ == geteuid();
  if (auto pinned = PinClientFile(fd, req->fd_offset, req->length, may_signal); !pinned) {
    close(fd);
    return Refuse(MessageType::kMapDma, pinned.error().errno_value(), pinned.error().what());
  }
  void* host = mmap(nullptr, req->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                    static_cast<off_t>(req->fd_offset));
  const int mmap_errno = errno;
  close(fd);
  if (host == MAP_FAILED)
    return Refuse(MessageType::kMapDma, mmap_errno, "the daemon could not map the client's fd");
  vpci::DmaRegion region{.iova = req->iova, .length = req->length, .host = host, .fd = -1,
                         .fd_offset = 0};
  if (auto mapped = function_->device->MapDmaFor(uid_, region); !mapped) {
    munmap(host, req->length);
    return Refuse(MessageType::kMapDma, mapped.error().errno_value(), mapped.error().what());
  }
  {
    std::lock_guard lock(mu_);
    mappings_[req->iova] = Mapping{req->length, host};
    mapped_bytes_ += req->length;
  }
  return Reply(MessageType::kMapDma, 0);
}

Result<void> Session::UnmapDma(const Frame& frame) {
  auto req = ReadStruct<UnmapDmaRequest>(frame.payload);
  if (!req || !frame.fds.empty()) {
    (void)Refuse(MessageType::kUnmapDma, EPROTO, "malformed DMA unmap");
    return Fail(EPROTO, "simd: malformed unmap");
  }
  Mapping m;
  {
    std::lock_guard lock(mu_);
    auto it = mappings_.find(req->iova);
    if (it == mappings_.end() || it->second.length != req->length)
      return Refuse(MessageType::kUnmapDma, ENOENT, "no DMA mapping of this client there");
    m = it->second;
  }
  if (auto unmapped = function_->device->UnmapDma(req->iova, req->length); !unmapped)
    return Refuse(MessageType::kUnmapDma, unmapped.error().errno_value(), unmapped.error().what());
  if (m.host != nullptr) munmap(m.host, m.length);
  {
    std::lock_guard lock(mu_);
    mappings_.erase(req->iova);
    mapped_bytes_ -= m.length;
  }
  return Reply(MessageType::kUnmapDma, 0);
}

void Session::Release() {
  if (function_ == nullptr) return;
  std::vector<std::vector<std::byte>> cmds;
  {
    std::lock_guard lock(mu_);
    cmds = owned_.ReleaseCommands();
  }
  uint32_t failed = 0;
  for (auto& in : cmds) {
    const auto opcode = static_cast<uint16_t>(prm::Get(std::span<const std::byte>(in),
                                                       prm::mbox_in::opcode));
    prm::Bits(std::span<std::byte>(in)).set(prm::mbox_in::uid, CarriesUid(opcode) ? uid_ : 0);
    std::vector<std::byte> out(16);
    std::unique_lock memic_lock(function_->memic_pages->mutex(), std::defer_lock);
    if (opcode == prm::DEALLOC_MEMIC) memic_lock.lock();
    if (auto r = function_->driver->commander().Exec(in, out); !r) {
      ++failed;
      std::fprintf(stderr, "onchip simd: client %u release: %s\n", id_,
                   r.error().describe().c_str());
    } else {
      window_->AfterCommand(in, out);
    }
  }
  std::map<uint64_t, Mapping> mappings;
  {
    std::lock_guard lock(mu_);
    owned_.Clear();
    mappings.swap(mappings_);
    mapped_bytes_ = 0;
    if (vector_) function_->GiveBackVector(*vector_);
    vector_.reset();
  }
  window_.reset();  // after the objects on its pages went
  {
    // Its DMA handles' references (the mkeys that named them went above).
    std::lock_guard lock(mu_);
    for (const auto& [index, refs] : steering_tags_)
      for (uint32_t i = 0; i < refs; ++i) function_->driver->steering_tags().Release(index);
    steering_tags_.clear();
  }
  for (auto& [iova, m] : mappings) {
    if (auto r = function_->device->UnmapDma(iova, m.length); !r)
      std::fprintf(stderr, "onchip simd: client %u unmap: %s\n", id_, r.error().describe().c_str());
    if (m.host != nullptr) munmap(m.host, m.length);
  }
  if (!cmds.empty() || !mappings.empty())
    std::fprintf(stderr, "onchip simd: client %u (pid %d) gone: %zu release command(s), %u failed, "
                 "%zu DMA mapping(s) unmapped\n", id_, static_cast<int>(pid_), cmds.size(), failed,
                 mappings.size());
}

std::string Session::DescribeJson() const {
  std::lock_guard lock(mu_);
  if (function_ == nullptr) return {};
  std::string s = "{\"id\": " + std::to_string(id_) + ", \"pid\": " + std::to_string(pid_) +
                  ", \"user\": " + std::to_string(user_) + ", \"uid\": " + std::to_string(uid_) +
                  ", \"function\": " + std::to_string(function_->index) + ", \"objects\": {";
  const auto counts = owned_.counts();
  bool first = true;
  for (std::size_t k = 0; k < prm::kObjectKindCount; ++k) {
    if (counts[k] == 0) continue;
    s += std::string(first ? "" : ", ") + "\"" + std::string(prm::kObjectKinds[k].name) +
         "\": " + std::to_string(counts[k]);
    first = false;
  }
  s += "}, \"objects_total\": " + std::to_string(owned_.size()) +
       ", \"dma_mappings\": " + std::to_string(mappings_.size()) +
       ", \"dma_bytes\": " + std::to_string(mapped_bytes_) +
       ", \"memic_bytes\": " + std::to_string(owned_.memic_bytes()) + "}";
  return s;
}

}  // namespace onchip::simd
