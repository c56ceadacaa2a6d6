// The device's interrupt side: one thread per brought-up device, as the kernel's interrupt
// handler, that turns EQEs into what libibverbs reads.
//
// The thread waits on the function's interrupt eventfd for vector 0 (bus::Bus::InterruptFd,
// the same eventfd whether the function lives in this process or behind a daemon) and on a wake
// eventfd of its own. Each wake it drains its EQs (the device's one EQ, on vector 0, subscribed
// to completions and the async types below): every software-owned EQE is dispatched and consumed, then the EQ doorbell writes
// the consumer index and re-arms the EQ, so the next EQE raises the next interrupt.
//
// Dispatch:
//   - a completion EQE names a CQ by number; a CQ watched with a completion channel gets one
//     8-byte ib_uverbs_comp_event_desc {cq_handle} written to its channel (the write end of the
//     pipe whose read end is ibv_comp_channel.fd), as the kernel's uverbs queues one per event;
//   - the async types (QP, SRQ, CQ error, port change) become 16-byte ib_uverbs_async_event_desc
//     records {element, event_type} on the async_fd sink of the context the object belongs to:
//     element is the verbs object's address for queue events, the port number for port events.
// Events for queues nobody watches are consumed and dropped (the kernel does the same for
// objects already destroyed). The sinks' write ends are non-blocking: a reader that lets 8192
// events pile up loses the newest rather than stalling the device's events.
//
// A function that can vanish (a device daemon's: bus::Bus::LinkFd) is watched too: when its
// link hangs up the bus is marked gone (posts and empty polls then fail with EIO), every context
// gets IBV_EVENT_DEVICE_FATAL on its async fd and every completion channel's write end closes.
//
// A channel's write end belongs to this object from AddChannel on. The application ends a
// channel with ibv_destroy_comp_channel, which closes the read end (libibverbs' own code): the
// thread sees the write end's POLLERR and closes it. Stop() (and the destructor) joins the
// thread and closes every fd it holds; nothing is dispatched afterwards.
//
// Nothing here is on the post/poll paths: only creation, destruction and the event thread take
// the table lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/bus/bus.h"
#include "driver/eq.h"
#include "uapi/result.h"

namespace onchip::driver {

// Completion events (event type 0).
inline constexpr uint64_t kCompletionEventMask = uint64_t{1} << 0x00;
// The async event types the kernel subscribes its async EQ to (event_bitmask[0] bits): path
// migration, communication established, SQ drained, CQ error, WQ catastrophic, path migration
// failed, port change, WQ invalid request, WQ access error, SRQ catastrophic, last WQE reached,
// SRQ limit.
inline constexpr uint64_t kAsyncEventMask =
    uint64_t{1} << 0x01 | uint64_t{1} << 0x02 | uint64_t{1} << 0x03 | uint64_t{1} << 0x04 |
    uint64_t{1} << 0x05 | uint64_t{1} << 0x07 | uint64_t{1} << 0x09 | uint64_t{1} << 0x10 |
    uint64_t{1} << 0x11 | uint64_t{1} << 0x12 | uint64_t{1} << 0x13 | uint64_t{1} << 0x14;

// Which number space an async event's queue number lives in.
enum class EventQueueKind : uint8_t { kQp, kSrq, kCq };

class EventThread {
 public:
  // Starts the thread on `eqs` (they outlive it) and arms them. ENODEV when the bus offers no
  // interrupt for vector 0; the errno of eventfd or thread creation otherwise.
  static Result<std::unique_ptr<EventThread>> Start(bus::Bus& bus,
                                                    std::vector<CompletionEq*> eqs);
  ~EventThread();
  EventThread(const EventThread&) = delete;
  EventThread& operator=(const EventThread&) = delete;

  // Joins the thread and closes the channels' write ends. Idempotent.
  void Stop();

  // Completion channels. AddChannel takes `write_fd` (made non-blocking here) for `channel`,
  // a channel of `context`.
  Result<void> AddChannel(const void* channel, const void* context, int write_fd);
  // Whether `channel` was added for `context` and its reader still has it open.
  bool ChannelOf(const void* channel, const void* context) const;
  // From now on completion EQEs of `cqn` write `cq_handle` to `channel` (added before).
  void WatchCq(uint32_t cqn, uint64_t cq_handle, const void* channel);
  // Stops that, and takes the CQ's records still unread out of the channel (`read_fd`, its read
  // end), as the kernel drops a destroyed CQ's queued events: no reader then gets a destroyed
  // CQ's handle.
  void UnwatchCq(uint32_t cqn, uint64_t cq_handle, int read_fd);

  // Async events. The sink of `context` (its async_fd's write end, not owned: remove it before
  // closing it).
  void AddAsyncSink(const void* context, int write_fd);
  void RemoveAsyncSink(const void* context);
  // Events of queue `number` go to the sink of `context` with `element` (the verbs object).
  void WatchQueue(EventQueueKind kind, uint32_t number, uint64_t element, const void* context);
  void UnwatchQueue(EventQueueKind kind, uint32_t number);
  // Port events go to every sink (each context sees its ports' changes).

  // EQEs consumed so far (tests).
  uint64_t eqes() const;

 private:
  EventThread(bus::Bus& bus, std::vector<CompletionEq*> eqs) : bus_(bus), eqs_(std::move(eqs)) {}
  void Run();
  void Drain();
  void Dispatch(const prm::pod::mlx5_eqe& eqe);  // with mu_ held
  // The bus's link hung up: marks the bus gone, reports IBV_EVENT_DEVICE_FATAL, ends channels.
  void FunctionLost();
  void Wake();

  struct Channel {
    const void* context = nullptr;
    int fd = -1;  // the write end; -1 once its reader is gone
  };
  struct Watched {
    uint64_t element = 0;
    const void* context = nullptr;
  };

  bus::Bus& bus_;
  std::vector<CompletionEq*> eqs_;
  int irq_fd_ = -1;   // the bus's; not owned
  int wake_fd_ = -1;  // owned
  std::thread thread_;
  bool stopping_ = false;  // under mu_

  mutable std::mutex mu_;
  std::map<const void*, Channel> channels_;
  std::map<uint32_t, std::pair<uint64_t, const void*>> cq_channels_;  // cqn -> {handle, channel}
  std::map<const void*, int> async_sinks_;
  std::map<std::pair<EventQueueKind, uint32_t>, Watched> queues_;
  uint64_t eqes_ = 0;
};

}  // namespace onchip::driver
