// The software ConnectX as an in-process object: a test, a benchmark or the CLI constructs one,
// hands it to the sim bus as a vpci::Function, and destroys it.
//
// A device thread (device_thread.h) runs the firmware and the data engine: it sleeps on the
// device's sleep word in BAR0 (a futex, uapi/vpci.h), which Kick() and a driver's doorbell wake,
// with a timeout of config.idle_poll_period, and on every wakeup polls the command queue, runs a
// data-engine pass, advances the health counter (unless a test stopped it) and the internal
// timer, and clears `initializing` once config.init_delay has passed. After a pass that found work
// it stays awake, watching doorbells without being kicked, only while a CPU is spare
// (config.engine_spin, cpu_room.h) and for at most config.engine_idle_period without work; then
// it sets the sleep word, looks once more, and sleeps. An idle device therefore costs one short
// wakeup per idle_poll_period.
//
// Create(config) gives the device a thread of its own, started here and joined when the device
// goes. Create(config, thread) attaches it to a DeviceThread that other devices share: one
// thread then serves them all, awake while any of them has work (a device daemon serves its
// functions so, so that n functions cost one spinner). Either way the device detaches from its
// thread in its destructor before anything of it is torn down.
//
// The firmware core (Firmware) and the queue transport (CommandQueue) are separate objects so a
// device daemon serving several processes can reuse both.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "tools/sim/bar.h"
#include "tools/sim/command_queue.h"
#include "tools/sim/config.h"
#include "tools/sim/device_thread.h"
#include "tools/sim/engine.h"
#include "tools/sim/engine_state.h"
#include "tools/sim/firmware.h"
#include "tools/sim/iommu.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::sim {

class Device final : public vpci::Function {
 public:
  // A device with a thread of its own.
  static Result<std::unique_ptr<Device>> Create(const DeviceConfig& config = {});
  // A device served by `thread`, with whatever other devices are attached to it (EINVAL when
  // `thread` is null). The device holds the thread; the thread ends with its last holder.
  static Result<std::unique_ptr<Device>> Create(const DeviceConfig& config,
                                                std::shared_ptr<DeviceThread> thread);
  ~Device() override;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // vpci::Function
  vpci::SharedMemory bar0() const override;
  // Maps for the function's own context (uid 0).
  Result<void> MapDma(const vpci::DmaRegion& region) override;
  Result<void> UnmapDma(uint64_t iova, uint64_t length) override;
  // The memory of user context `uid`: only its commands and objects may name it (Iommu's
  // Owners). A device daemon maps each client's memory so.
  Result<void> MapDmaFor(uint16_t uid, const vpci::DmaRegion& region);
  // Maps anonymous memory of process `pid` at `remote_address` (Iommu::MapProcess: EPERM when
  // the kernel refuses this process ptrace access to it) for `uid`; UnmapDma removes it like
  // any mapping.
  Result<void> MapProcessDma(uint64_t iova, uint64_t length, pid_t pid, uint64_t remote_address,
                             uint16_t uid = 0);
  // The same in the address space a client's own handles reach (Iommu::MapProcess).
  Result<void> MapProcessDma(uint64_t iova, uint64_t length,
                             std::shared_ptr<const ProcessFile> file, uint64_t remote_address,
                             uint16_t uid = 0);
  // The ST table is the MSI-X table in BAR0 (bar_layout.h); nullopt without mkey_pcie_tph.
  std::optional<vpci::TphCapability> tph() const override;
  // Wakes the device thread if it sleeps (vpci::WakeEngine on the BAR0 sleep word, which a
  // client of a device daemon reaches through its own mapping of BAR0) and asks for a full
  // service even while it is awake.
  void Kick() override;
  // A sleep word of a client of this device's own (a device daemon gives each client one, in
  // memory only that client and the daemon map: tools/simd/client_window.h), beside BAR0's. The
  // device stores every one of them as it stores its own and its thread waits on all of them,
  // so a client's WakeEngine on its word wakes the device, and a client that clears its word
  // changes nothing for another. RemoveSleepWord returns once the device no longer stores the
  // word; the thread's wait stops using it at its next wakeup, which RemoveSleepWord asks for.
  void AddSleepWord(uint32_t* word);
  void RemoveSleepWord(uint32_t* word);
  // One eventfd per interrupt vector below num_interrupt_vectors (the data engine's).
  int InterruptFd(uint16_t vector) const override { return engine_.InterruptFd(vector); }

  // The steering tag ST table entry `index` holds now, as the device reads it for an mkey with
  // pcie_tph_steering_tag_index = index (index 0 means "no tag" in an mkc; its entry is still
  // readable here). nullopt past the table or without TPH.
  std::optional<uint16_t> SteeringTag(uint16_t index) const { return bar_.SteeringTags().Tag(index); }

  const DeviceConfig& config() const { return config_; }
  const BarLayout& layout() const { return bar_.layout(); }
  Firmware& firmware() { return firmware_; }
  // The data engine: its GIDs, its interrupt eventfds (one per vector, signalled when an armed
  // EQ gets an EQE) and its interrupt count.
  Engine& engine() { return engine_; }
  // Whether the data engine has said it sleeps (the sleep word of uapi/vpci.h).
  bool engine_sleeping() const;
  Bar0& bar() { return bar_; }
  std::size_t dma_mappings() const { return iommu_.mapping_count(); }
  // The device's view of host memory (what a DMA read or write at an IOVA reaches).
  const Iommu& iommu() const { return iommu_; }

  // ---- fault injection ----
  void InjectFailure(const InjectedFailure& f) { firmware_.InjectFailure(f); }
  void StallNext(std::optional<uint16_t> opcode = std::nullopt) { queue_.StallNext(opcode); }
  void ReleaseStall();
  void StopHealthCounter(bool stopped) { health_stopped_.store(stopped); }
  // The port's link down or up (Firmware::SetLinkUp); the engine raises PORT_CHANGE at once.
  void SetLinkUp(bool up) {
    firmware_.SetLinkUp(up);
    Kick();
  }

  // ---- counters ----
  Counters counters() const { return firmware_.counters(); }
  QueueCounters queue_counters() const { return queue_.counters(); }
  // Wakeups of the device thread that serviced this device.
  uint64_t wakeups() const { return wakeups_.load(); }
  // The CPU time so far of the thread serving this device (for idle-cost tests); on a shared
  // thread that is every attached device's cost together.
  std::chrono::nanoseconds thread_cpu_time() const { return thread_->cpu_time(); }
  // The thread serving this device (its own, or the one it shares).
  const DeviceThread& thread() const { return *thread_; }

 private:
  friend class DeviceThread;
  Device(const DeviceConfig& config, Bar0 bar);

  // ---- what the device thread does with this device (under the thread's lock) ----
  struct ServiceResult {
    bool progressed = false;
    // When an engine retry (an ACK timeout, an RNR wait, CQ moderation) is due; max: none.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  };
  // One wakeup's work: timer, health counter, init delay, then (once initialized) an engine
  // pass, the command queue and a second engine pass if commands ran.
  ServiceResult Service(std::chrono::steady_clock::time_point now);
  // The awake thread's look before it runs Service: whether anything may be there to do. No
  // lock, no allocation, no syscall: a few dozen relaxed loads of BAR0 words and the engine's
  // own state. True while the device initializes, when the last Service progressed (work in
  // flight runs full passes until one finds nothing) or asked to run again by now (an engine
  // retry, moderation), when something kicked the device (a link change, a released stall),
  // when the command doorbell or a UAR doorbell of a live queue was rung since the pass took it,
  // or when a packet waits (Engine::AnythingRung). Whatever this look finds rung stays rung
  // until a Service takes it, so a ring that lands just after the look is seen by the next one.
  bool NeedsService(std::chrono::steady_clock::time_point now) const {
    return initializing_ || progressed_ || now >= deadline_ ||
           kicked_.load(std::memory_order_relaxed) || bar_.CommandDoorbellRung() ||
           engine_.AnythingRung();
  }
  // A wakeup that needs no service still keeps the device's clocks: the wakeup count, the
  // internal timer (ibv_query_rt_values_ex and CQE timestamps read it), the read-only init
  // segment bits, the health counter, and the end of the init delay.
  void Tick(std::chrono::steady_clock::time_point now);
  // When the last Service asked to run again (max: never), for the sleeping thread's timeout.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  // The sleep word in BAR0 and the engine's port (a packet from the wire kicks a sleeper).
  void SetSleeping(bool sleeping);
  bool sleeping() const { return sleeping_; }
  // The look once more after the sleep word is set, so a doorbell rung meanwhile is never slept
  // through: whether the engine found work or a packet waits.
  bool FoundWorkBeforeSleep();
  // The futexes the sleeping thread waits on: the BAR0 sleep word and the clients' (under
  // the thread's lock; `add` is called once per word).
  template <typename F>
  void ForEachSleepWord(F&& add) const {
    add(bar_.EngineSleepWord());
    std::lock_guard lock(words_mu_);
    for (uint32_t* w : client_words_) add(w);
  }

  const DeviceConfig config_;
  Bar0 bar_;
  Iommu iommu_;
  // The context memory (contexts.h): the firmware writes it, the engine runs what it describes.
  Contexts contexts_;
  // The data engine's own per-queue state (engine_state.h): the engine runs on it, the firmware
  // starts it afresh with each queue and reads it for its queries.
  EngineState engine_state_;
  Firmware firmware_;
  CommandQueue queue_;
  const std::chrono::steady_clock::time_point born_;
  Engine engine_;
  // AddSleepWord's words; SetSleeping stores them under the lock, so a removed word is never
  // stored again.
  mutable std::mutex words_mu_;
  std::vector<uint32_t*> client_words_;
  std::atomic<bool> health_stopped_{false};
  std::atomic<uint64_t> wakeups_{0};
  // Set by Kick, cleared by Service before its pass: a kick asks for a full service even while
  // the thread is awake (SetLinkUp and ReleaseStall change state no doorbell shows).
  std::atomic<bool> kicked_{false};
  // The serving thread's alone (touched only inside its service, under its lock).
  bool initializing_ = true;
  bool sleeping_ = true;
  bool progressed_ = false;  // the last Service's
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::shared_ptr<DeviceThread> thread_;  // set by Create, which attaches; never null after
};

}  // namespace onchip::sim
