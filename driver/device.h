// The device core: one brought-up HCA function and everything the driver keeps about it.
//
// Device::Open runs bring-up (driver/hca.h) over a Bus, unwinding in reverse on any failure so
// the function is left disabled with every page returned. The Device owns the bus, the memory
// provider every driver-allocated DMA buffer comes from (alloc/, mapped through the bus), the
// command queue, the pages lent to firmware, the queried capabilities and GID table, the MEMIC and SW ICM
// allocators, the UARs (uar.h), the completion EQ (eq.h), the TPH steering-tag table, and the registry of live objects
// (registry.h: every kind, created and destroyed without a device-wide lock). Objects hold a
// shared_ptr to it, so the memory stays valid while any object lives; Close() (or the last owner
// going away) releases every live object on the device first, children before parents, then
// tears the function down, and reports what it did. Objects found released afterwards answer EIO
// and free without commands.
//
// The embedded ibv_context is what the objects' verbs structs point at (ibv_dm.context,
// ibv_pd.context); Device::FromVerbs maps it back.
#pragma once

#include <infiniband/verbs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "alloc/provider.h"
#include "driver/bus/bus.h"
#include "driver/caps.h"
#include "driver/cmd/cmdq.h"
#include "driver/cmd/owner_channel.h"
#include "driver/gid_table.h"
#include "driver/memic.h"
#include "driver/registration_queue.h"
#include "driver/registry.h"
#include "driver/rings/qpn_table.h"
#include "driver/sw_icm.h"

namespace onchip::driver {

class CompletionEq;
class Device;
class EventThread;
struct Locator;
class PageSupply;
class Uars;
class SteeringTagTable;

struct DeviceOptions {
  std::chrono::milliseconds firmware_ready_timeout{120000};
  cmd::CmdqOptions cmdq;
};

// The one way to a Device (open.h).
Result<std::shared_ptr<Device>> Open(const Locator& locator, DeviceOptions opts);

// What Close() did. `first_error` is the first command that failed (teardown goes on past it).
struct TeardownReport {
  std::array<uint32_t, kObjectKinds> released{};  // live objects Close() released, by kind
  uint64_t pages_reclaimed = 0;
  uint64_t pages_still_held = 0;  // pages the firmware kept (memory left allocated, not freed)
  std::optional<Error> first_error;

  uint32_t of(ObjectKind kind) const { return released[static_cast<std::size_t>(kind)]; }
  // Objects of any kind Close() found live.
  uint32_t objects() const;
  std::string describe() const;
};

class Device : public std::enable_shared_from_this<Device> {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Destroys live objects, then TEARDOWN_HCA, pages back, DISABLE_HCA. Idempotent: a second
  // call reports nothing done.
  TeardownReport Close();
  bool closed() const { return registry_.closed(); }
  // Whether this process is the one the device was opened in. Its threads (the event thread, an
  // in-process software ConnectX), its command path (the command queue, or the connection to a
  // daemon) and its DMA memory exist only there: a forked child inherits a copy of this object
  // and must not use it (driver/verbs/README.md, the process model).
  bool InThisProcess() const { return process_ == getpid(); }

  bus::Bus& bus() { return *bus_; }
  // Where driver-allocated DMA memory comes from: hugepages (EAL, else memfd hugetlb, else memfd
  // 4 KiB), carved into buffers, each region mapped once through bus().
  alloc::MemoryProvider& memory() { return *memory_; }
  cmd::Commander& commander() { return *commander_; }
  // Whether another process brought the function up and owns its command queue (Attach).
  bool attached() const { return remote_commander_ != nullptr; }
  const Caps& caps() const { return caps_; }
  // Port 1's GID table as the firmware held it when the device was opened (gid_table.h).
  const GidTable& gid_table() const { return gid_table_; }
  MemicAllocator& memic() { return memic_; }
  SwIcmAllocator& sw_icm() { return sw_icm_; }
  const PageSupply& pages() const { return *pages_; }
  Uars& uars() { return *uars_; }
  // The completion EQ every CQ reports to (eq.h), created at bring-up on the shared UAR; it
  // receives the async events as well (events.h).
  uint32_t comp_eqn() const;
  // The EQ itself (its ring: tests read the EQEs the device wrote); null before bring-up.
  const CompletionEq* comp_eq() const { return comp_eq_.get(); }
  SteeringTagTable& steering_tags() { return *steering_tags_; }
  // An MR's PD or access changed in place, its keys kept: on a function this process owns, by
  // the device's own memory-registration queue (registration_queue.h; umr_queue.h: a REG_UMR
  // QP made on first use, replaced when an error CQE broke it); on an attached one, by the
  // owner's channel.
  // EOPNOTSUPP when neither can (an attached function without the channel, or no REG_UMR queue
  // could be made): the caller then re-registers with a new key, as mlx5_ib does when a UMR
  // cannot serve.
  Result<void> UpdateMkeyInPlace(uint32_t mkey, const cmd::MkeyUpdate& update);
  // The interrupt side (events.h): completion channels and async events. Null when the bus
  // delivers no interrupts.
  EventThread* events() { return events_.get(); }
  // ibv_device_attr_ex.max_dm_size as mlx5_ib reports it: max_memic_size with MEMIC, else 0.
  uint64_t max_dm_size() const { return memic_.max_size(); }

  // The embedded ibv_context: what objects created through the C++ API point at. A verbs
  // object points at the context it was created through (ibv_pd.context, ibv_cq.context), which
  // may be any context the device serves.
  ibv_context* verbs() { return &verbs_; }
  // Contexts a libibverbs provider opened on this device, beside the embedded one: every open of
  // one function in a process shares the brought-up device, as uverbs contexts share one PCI
  // function. Serve() before creating objects through `context`; StopServing() when it closes.
  // `file` names the uverbs file the context is a face of: contexts imported from one another
  // (ibv_import_device) share one and so share objects (SameFile); 0 is a file of its own.
  void Serve(ibv_context* context, uint64_t file = 0);
  void StopServing(ibv_context* context);
  // The device serving `ctx`: its embedded context or one it serves (a process-wide lookup, for
  // the verbs calls of driver/verbs/calls.h); null for any other context, so a foreign one is
  // refused rather than misread.
  static Device* FromVerbs(ibv_context* ctx);
  // Whether objects made through `a` may be used through `b`: the same context, or two served
  // faces of one uverbs file on one device.
  static bool SameFile(const ibv_context* a, const ibv_context* b);
  // The table FromVerbs reads, held across fork() (pthread_atfork, driver/verbs/session.cc) so
  // that a child never inherits it locked by a thread it does not have.
  static void HoldContextsForFork();
  static void ReleaseContextsAfterFork();

  // QP number -> the QP's work queues, for every CQ's poller (a CQE names its QP by number).
  rings::QpnTable& qpns() { return *qpns_; }
  // XRC SRQ user index (driver/srq.h) -> its ring, for the pollers of receive CQEs into XRC SRQs
  // (the CQE's srqn holds the index; the XRC target QP has no receive queue of its own).
  rings::QpnTable& xrc_srqns() { return *xrc_srqns_; }

  // Every live object, and the ticket any creation or destruction takes (registry.h).
  Registry& registry() { return registry_; }

  // A handle for ibv_dm.handle, unique on this device (the uverbs object handle's role).
  uint32_t NextDmHandle() { return next_dm_handle_.fetch_add(1, std::memory_order_relaxed); }

  // A fresh 8-bit mkey variant (mkc.mkey_7_0), so a reused mkey index yields a different key.
  // Never 0: mkey index 1 with variant 0 is 0x100, MLX5_INVALID_LKEY, the key that ends a
  // receive WQE's scatter list, so an MR with that lkey could not receive.
  uint8_t NextMkeyVariant() {
    for (;;) {
      const uint8_t v = mkey_variant_.fetch_add(1, std::memory_order_relaxed);
      if (v != 0) return v;
    }
  }

 private:
  // driver::Open makes the bus the locator names and calls one of these.
  friend Result<std::shared_ptr<Device>> Open(const Locator& locator, DeviceOptions opts);
  // Brings up the function on `bus`, which this process owns.
  // `make_umr` makes the registration queue on first use (null: there is none, EOPNOTSUPP).
  static Result<std::shared_ptr<Device>> Open(std::unique_ptr<bus::Bus> bus, DeviceOptions opts,
                                              RegistrationQueueMaker make_umr);
  // A function someone else brought up and serves (a device daemon, as the kernel serves a
  // function to user space): no ENABLE/INIT_HCA and no pages, commands through `commander`
  // (which must outlive nothing but this device: the device owns it). Capabilities are queried;
  // the device creates its own UAR and completion EQ under the commander's uid. Close() releases
  // this device's objects and leaves the function up. `owner` (may be null) is what the owner
  // does for this process beyond commands (cmd/owner_channel.h).
  static Result<std::shared_ptr<Device>> Attach(std::unique_ptr<bus::Bus> bus,
                                                std::unique_ptr<cmd::Commander> commander,
                                                std::unique_ptr<cmd::OwnerChannel> owner = nullptr);
  explicit Device(std::unique_ptr<bus::Bus> bus);
  Result<void> BringUp(const DeviceOptions& opts);
  // What bring-up does after INIT_HCA, and all an attached device does: capabilities, MEMIC and
  // SW ICM, UARs, the completion EQ, the steering-tag table.
  Result<void> Serve();

  // Declaration order is destruction order reversed: pages and the queue go before the memory
  // provider, the provider (which unmaps its regions through the bus) before the bus.
  std::unique_ptr<bus::Bus> bus_;
  std::unique_ptr<alloc::MemoryProvider> memory_;
  std::unique_ptr<cmd::Cmdq> cmdq_;
  std::unique_ptr<cmd::Commander> remote_commander_;  // attached: the owner's command channel
  cmd::Commander* commander_ = nullptr;                // cmdq_ or remote_commander_
  std::unique_ptr<cmd::OwnerChannel> owner_;          // attached: what the owner does beyond
  std::unique_ptr<PageSupply> pages_;
  Caps caps_;
  GidTable gid_table_;
  std::unique_ptr<Uars> uars_;
  std::unique_ptr<CompletionEq> comp_eq_;
  std::unique_ptr<SteeringTagTable> steering_tags_;
  std::unique_ptr<EventThread> events_;  // after the EQs: it goes before them
  // The REG_UMR queue, made or replaced as needed; call with umr_mu_ held. EIO after Close.
  Result<RegistrationQueue*> UmrQueueLocked();
  RegistrationQueueMaker make_umr_ = nullptr;
  std::mutex umr_mu_;
  std::unique_ptr<RegistrationQueue> umr_;  // its CQ reports to comp_eq_: it goes first
  MemicAllocator memic_;
  SwIcmAllocator sw_icm_;
  ibv_context verbs_{};
  const pid_t process_ = getpid();
  bool enabled_ = false;      // ENABLE_HCA succeeded
  bool initialized_ = false;  // INIT_HCA succeeded
  std::unique_ptr<rings::QpnTable> qpns_ = std::make_unique<rings::QpnTable>();
  std::unique_ptr<rings::QpnTable> xrc_srqns_ = std::make_unique<rings::QpnTable>();
  std::atomic<uint8_t> mkey_variant_{0};
  std::atomic<uint32_t> next_dm_handle_{1};
  Registry registry_;
};

}  // namespace onchip::driver
