#include "driver/events.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

namespace onchip::driver {
namespace {

// mlx5_eqe.type values of the async events (the kernel's enum mlx5_event).
enum : uint8_t {
  kComp = 0x00,
  kPathMig = 0x01,
  kCommEst = 0x02,
  kSqDrained = 0x03,
  kCqError = 0x04,
  kWqCatasError = 0x05,
  kPathMigFailed = 0x07,
  kPortChange = 0x09,
  kWqInvalReqError = 0x10,
  kWqAccessError = 0x11,
  kSrqCatasError = 0x12,
  kSrqLastWqe = 0x13,
  kSrqRqLimit = 0x14,
};
// PORT_CHANGE sub_type values.
enum : uint8_t {
  kPortDown = 1,
  kPortActive = 4,
  kPortInitialized = 5,
  kPortLid = 6,
  kPortPkey = 7,
  kPortGuid = 8,
  kPortClientRereg = 9,
};

// The EQE's data, as offsets from its start (data is EQE bytes 32-59).
constexpr std::size_t kQueueNumberOffset = 24;  // QP/SRQ events, completions: B56-59
constexpr std::size_t kCqErrorCqnOffset = 0;    // CQ error: B32-35
constexpr std::size_t kPortByteOffset = 8;      // port change: B40, port number in bits 7:4

uint32_t Be24At(const prm::pod::mlx5_eqe& eqe, std::size_t offset) {
  uint32_t v = 0;
  for (std::size_t i = 1; i < 4; ++i)
    v = v << 8 | std::to_integer<uint32_t>(eqe.data[offset + i]);
  return v;
}

// ib_uverbs_comp_event_desc and ib_uverbs_async_event_desc (rdma/ib_user_verbs.h).
struct CompEventDesc {
  uint64_t cq_handle;
};
struct AsyncEventDesc {
  uint64_t element;
  uint32_t event_type;
  uint32_t reserved;
};
static_assert(sizeof(CompEventDesc) == 8 && sizeof(AsyncEventDesc) == 16);

// The verbs event of a queue event type, and which number space names the queue.
struct QueueEvent {
  ibv_event_type type;
  EventQueueKind kind;
};
std::optional<QueueEvent> QueueEventOf(uint8_t type) {
  switch (type) {
    case kPathMig: return QueueEvent{IBV_EVENT_PATH_MIG, EventQueueKind::kQp};
    case kCommEst: return QueueEvent{IBV_EVENT_COMM_EST, EventQueueKind::kQp};
    case kSqDrained: return QueueEvent{IBV_EVENT_SQ_DRAINED, EventQueueKind::kQp};
    case kWqCatasError: return QueueEvent{IBV_EVENT_QP_FATAL, EventQueueKind::kQp};
    case kPathMigFailed: return QueueEvent{IBV_EVENT_PATH_MIG_ERR, EventQueueKind::kQp};
    case kWqInvalReqError: return QueueEvent{IBV_EVENT_QP_REQ_ERR, EventQueueKind::kQp};
    case kWqAccessError: return QueueEvent{IBV_EVENT_QP_ACCESS_ERR, EventQueueKind::kQp};
    case kSrqLastWqe: return QueueEvent{IBV_EVENT_QP_LAST_WQE_REACHED, EventQueueKind::kQp};
    case kSrqCatasError: return QueueEvent{IBV_EVENT_SRQ_ERR, EventQueueKind::kSrq};
    case kSrqRqLimit: return QueueEvent{IBV_EVENT_SRQ_LIMIT_REACHED, EventQueueKind::kSrq};
    default: return std::nullopt;
  }
}

std::optional<ibv_event_type> PortEventOf(uint8_t sub_type) {
  switch (sub_type) {
    case kPortActive: return IBV_EVENT_PORT_ACTIVE;
    case kPortDown:
    case kPortInitialized: return IBV_EVENT_PORT_ERR;
    case kPortLid: return IBV_EVENT_LID_CHANGE;
    case kPortPkey: return IBV_EVENT_PKEY_CHANGE;
    case kPortGuid: return IBV_EVENT_GID_CHANGE;
    case kPortClientRereg: return IBV_EVENT_CLIENT_REREGISTER;
    default: return std::nullopt;
  }
}

}  // namespace

Result<std::unique_ptr<EventThread>> EventThread::Start(bus::Bus& bus,
                                                        std::vector<CompletionEq*> eqs) {
  std::unique_ptr<EventThread> t(new EventThread(bus, std::move(eqs)));
  t->irq_fd_ = bus.InterruptFd(bus.completion_vector());
  if (t->irq_fd_ < 0) return Fail(ENODEV, "event thread: the function gives this driver no interrupt vector");
  t->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (t->wake_fd_ < 0) return Fail(errno, "event thread: eventfd");
  try {
    t->thread_ = std::thread([raw = t.get()] { raw->Run(); });
  } catch (const std::system_error& e) {
    return Fail(e.code().value(), "event thread: cannot start");
  }
  return t;
}

EventThread::~EventThread() { Stop(); }

void EventThread::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    Wake();
    thread_.join();
  }
  std::lock_guard lock(mu_);
  for (auto& [channel, c] : channels_)
    if (c.fd >= 0) close(std::exchange(c.fd, -1));
  if (wake_fd_ >= 0) close(std::exchange(wake_fd_, -1));
}

void EventThread::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void EventThread::Run() {
  // The thread takes no signals: the application's handlers run on its own threads, and a
  // write to a channel whose reader is gone answers EPIPE here instead of raising SIGPIPE.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::vector<pollfd> fds;
  std::vector<const void*> watched;  // the channel behind fds[3 + i]
  int link_fd = bus_.LinkFd();
  for (;;) {
    Drain();
    // fds[2]: the function's link, POLLRDHUP only (replies on it are the commander's to read);
    // a negative fd is ignored by poll.
    fds.assign({{irq_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {link_fd, POLLRDHUP, 0}});
    watched.clear();
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      for (const auto& [channel, c] : channels_) {
        if (c.fd < 0) continue;
        fds.push_back({c.fd, 0, 0});  // POLLERR: the read end was closed
        watched.push_back(channel);
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR cannot happen: signals blocked
    uint64_t count;
    if (fds[0].revents & POLLIN) [[maybe_unused]] ssize_t n = read(irq_fd_, &count, sizeof count);
    if (fds[1].revents & POLLIN) [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof count);
    if (fds[2].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
      FunctionLost();
      link_fd = -1;
      continue;
    }
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < watched.size(); ++i) {
      if (!(fds[3 + i].revents & (POLLERR | POLLHUP))) continue;
      auto it = channels_.find(watched[i]);
      if (it != channels_.end() && it->second.fd == fds[3 + i].fd) {
        close(it->second.fd);
        channels_.erase(it);  // the application destroyed the channel; its address may be reused
      }
    }
  }
}

void EventThread::FunctionLost() {
  bus_.MarkGone();
  std::lock_guard lock(mu_);
  // As the kernel reports a device whose function died: IBV_EVENT_DEVICE_FATAL to every context,
  // and the completion channels end (a reader blocked in ibv_get_cq_event returns an error
  // instead of waiting for events that will never come).
  const AsyncEventDesc fatal{0, static_cast<uint32_t>(IBV_EVENT_DEVICE_FATAL), 0};
  for (const auto& [context, fd] : async_sinks_) [[maybe_unused]] ssize_t n = write(fd, &fatal, sizeof fatal);
  for (auto& [channel, c] : channels_)
    if (c.fd >= 0) close(std::exchange(c.fd, -1));
}

void EventThread::Drain() {
  for (CompletionEq* eq : eqs_) {
    while (const prm::pod::mlx5_eqe* eqe = eq->Next()) {
      {
        std::lock_guard lock(mu_);
        Dispatch(*eqe);
        ++eqes_;
      }
      eq->Advance();
    }
    eq->UpdateCi(bus_, /*arm=*/true);
  }
}

void EventThread::Dispatch(const prm::pod::mlx5_eqe& eqe) {
  auto deliver_async = [&](const void* context, uint64_t element, ibv_event_type type) {
    auto sink = async_sinks_.find(context);
    if (sink == async_sinks_.end()) return;
    const AsyncEventDesc desc{element, static_cast<uint32_t>(type), 0};
    [[maybe_unused]] ssize_t n = write(sink->second, &desc, sizeof desc);
  };
  if (eqe.type == kComp) {
    auto it = cq_channels_.find(Be24At(eqe, kQueueNumberOffset));
    if (it == cq_channels_.end()) return;
    auto channel = channels_.find(it->second.second);
    if (channel == channels_.end() || channel->second.fd < 0) return;
    const CompEventDesc desc{it->second.first};
    [[maybe_unused]] ssize_t n = write(channel->second.fd, &desc, sizeof desc);
    return;
  }
  if (eqe.type == kCqError) {
    auto it = queues_.find({EventQueueKind::kCq, Be24At(eqe, kCqErrorCqnOffset)});
    if (it != queues_.end()) deliver_async(it->second.context, it->second.element, IBV_EVENT_CQ_ERR);
    return;
  }
  if (eqe.type == kPortChange) {
    auto type = PortEventOf(eqe.sub_type);
    if (!type) return;
    const uint64_t port = std::to_integer<uint64_t>(eqe.data[kPortByteOffset]) >> 4;
    for (const auto& [context, fd] : async_sinks_) deliver_async(context, port, *type);
    return;
  }
  auto event = QueueEventOf(eqe.type);
  if (!event) return;
  auto it = queues_.find({event->kind, Be24At(eqe, kQueueNumberOffset)});
  if (it != queues_.end()) deliver_async(it->second.context, it->second.element, event->type);
}

Result<void> EventThread::AddChannel(const void* channel, const void* context, int write_fd) {
  const int flags = fcntl(write_fd, F_GETFL);
  if (flags < 0 || fcntl(write_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int e = errno;
    close(write_fd);
    return Fail(e, "completion channel: non-blocking write end");
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      close(write_fd);
      return Fail(ENODEV, "completion channel: the device is closing");
    }
    auto& c = channels_[channel];
    if (c.fd >= 0) close(c.fd);  // a destroyed channel's address, reused before the thread saw it
    c = Channel{context, write_fd};
  }
  Wake();  // the thread watches the new write end from now on
  return {};
}

bool EventThread::ChannelOf(const void* channel, const void* context) const {
  std::lock_guard lock(mu_);
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.fd >= 0 && it->second.context == context;
}

void EventThread::WatchCq(uint32_t cqn, uint64_t cq_handle, const void* channel) {
  std::lock_guard lock(mu_);
  cq_channels_[cqn] = {cq_handle, channel};
}

void EventThread::UnwatchCq(uint32_t cqn, uint64_t cq_handle, int read_fd) {
  std::lock_guard lock(mu_);
  auto it = cq_channels_.find(cqn);
  if (it == cq_channels_.end() || it->second.first != cq_handle) return;
  auto channel = channels_.find(it->second.second);
  cq_channels_.erase(it);
  if (channel == channels_.end() || channel->second.fd < 0 || read_fd < 0) return;
  // Take every record out while the thread cannot add one (mu_), then put back the others in
  // their order.
  std::vector<uint64_t> keep;
  pollfd p{read_fd, POLLIN, 0};
  CompEventDesc desc;
  while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) &&
         read(read_fd, &desc, sizeof desc) == static_cast<ssize_t>(sizeof desc))
    if (desc.cq_handle != cq_handle) keep.push_back(desc.cq_handle);
  for (uint64_t handle : keep) {
    const CompEventDesc back{handle};
    [[maybe_unused]] ssize_t n = write(channel->second.fd, &back, sizeof back);
  }
}

void EventThread::AddAsyncSink(const void* context, int write_fd) {
  // Never stall the device's events on a reader that does not read.
  if (const int flags = fcntl(write_fd, F_GETFL); flags >= 0)
    (void)fcntl(write_fd, F_SETFL, flags | O_NONBLOCK);
  std::lock_guard lock(mu_);
  async_sinks_[context] = write_fd;
}

void EventThread::RemoveAsyncSink(const void* context) {
  std::lock_guard lock(mu_);
  async_sinks_.erase(context);
}

void EventThread::WatchQueue(EventQueueKind kind, uint32_t number, uint64_t element,
                             const void* context) {
  std::lock_guard lock(mu_);
  queues_[{kind, number}] = Watched{element, context};
}

void EventThread::UnwatchQueue(EventQueueKind kind, uint32_t number) {
  std::lock_guard lock(mu_);
  queues_.erase({kind, number});
}

uint64_t EventThread::eqes() const {
  std::lock_guard lock(mu_);
  return eqes_;
}

}  // namespace onchip::driver
