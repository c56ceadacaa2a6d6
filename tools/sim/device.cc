#include "tools/sim/device.h"

#include <cerrno>

namespace onchip::sim {

Result<std::unique_ptr<Device>> Device::Create(const DeviceConfig& config) {
  ONCHIP_TRY(std::shared_ptr<DeviceThread> thread, DeviceThread::Create());
  return Create(config, std::move(thread));
}

Result<std::unique_ptr<Device>> Device::Create(const DeviceConfig& config,
                                               std::shared_ptr<DeviceThread> thread) {
  if (!thread) return Fail(EINVAL, "sim device: no device thread to attach to");
  ONCHIP_TRY(Bar0 bar, Bar0::Create(config));
  // An InfiniBand port gets its LID from the fabric's subnet manager before it exists (the
  // firmware reports it from the first command on); the engine's Attach takes the reservation.
  DeviceConfig resolved = config;
  resolved.lid = 0;
  if (config.port_type == DeviceConfig::PortType::kInfiniBand &&
      (resolved.lid = Fabric::Instance().ReserveLid(config.lid)) == 0) {
    return Fail(EADDRINUSE, "sim device: the LID is taken (or no unicast LID is free)");
  }
  std::unique_ptr<Device> device(new Device(resolved, std::move(bar)));
  device->thread_ = std::move(thread);
  device->thread_->Attach(*device);
  return device;
}

Device::Device(const DeviceConfig& config, Bar0 bar)
    : config_(config),
      bar_(std::move(bar)),
      contexts_(config_, bar_.layout()),
      firmware_(contexts_, EngineStateControl(engine_state_), config_, bar_.layout(), bar_.Memic(),
                bar_.SteeringTags(), iommu_),
      queue_(bar_, iommu_, firmware_, config_),
      born_(std::chrono::steady_clock::now()),
      engine_(ContextsView(contexts_), engine_state_, MkeyServices(firmware_), iommu_, bar_,
              config_, [this] { Kick(); }, born_) {
  // The engine starts asleep: the first doorbell wakes it.
  bar_.SetEngineSleeping(true);
  engine_.SetSleeping(true);
}

Device::~Device() {
  // Off the thread first: once Detach returns the thread is outside this device's service and
  // never enters it again, so what follows races with nothing. If this device held the last
  // reference to its thread, the thread is joined when thread_ goes, after this body.
  thread_->Detach(*this);
  engine_.Detach();
}

bool Device::engine_sleeping() const { return bar_.EngineSleeping(); }

void Device::SetSleeping(bool sleeping) {
  bar_.SetEngineSleeping(sleeping);
  {
    std::lock_guard lock(words_mu_);
    for (uint32_t* w : client_words_)
      std::atomic_ref<uint32_t>(*w).store(sleeping ? vpci::kEngineAsleep : 0, std::memory_order_seq_cst);
  }
  engine_.SetSleeping(sleeping);
  sleeping_ = sleeping;
}

bool Device::FoundWorkBeforeSleep() {
  // A device still initializing runs no engine pass yet (its sleep word stays set).
  if (initializing_) return false;
  // A kick or a command rung before the word was set found the engine awake and woke nobody:
  // this look, after the word's store, is what sees them (the waker fences before it reads the
  // word, vpci::WakeEngine).
  if (kicked_.load(std::memory_order_seq_cst) || bar_.CommandDoorbellRung()) {
    progressed_ = true;
    return true;
  }
  // What it found keeps full services running, as a Service's progress does.
  const bool found = engine_.Pass().progressed || engine_.InboundPending();
  if (found) progressed_ = true;
  return found;
}

vpci::SharedMemory Device::bar0() const { return {bar_.fd(), bar_.size()}; }

Result<void> Device::MapDma(const vpci::DmaRegion& region) { return iommu_.Map(region); }

Result<void> Device::MapDmaFor(uint16_t uid, const vpci::DmaRegion& region) {
  return iommu_.Map(region, uid);
}

Result<void> Device::MapProcessDma(uint64_t iova, uint64_t length, pid_t pid,
                                   uint64_t remote_address, uint16_t uid) {
  return iommu_.MapProcess(iova, length, pid, remote_address, uid);
}

Result<void> Device::MapProcessDma(uint64_t iova, uint64_t length,
                                   std::shared_ptr<const ProcessFile> file,
                                   uint64_t remote_address, uint16_t uid) {
  return iommu_.MapProcess(iova, length, std::move(file), remote_address, uid);
}

Result<void> Device::UnmapDma(uint64_t iova, uint64_t length) {
  return iommu_.Unmap(iova, length);
}

std::optional<vpci::TphCapability> Device::tph() const {
  if (!config_.mkey_pcie_tph) return std::nullopt;
  return vpci::TphCapability{.st_table_offset = bar_.layout().msix_start,
                             .st_table_size = static_cast<uint16_t>(bar_.layout().msix_entries)};
}

void Device::Kick() {
  kicked_.store(true, std::memory_order_seq_cst);
  vpci::WakeEngine(bar_.EngineSleepWord());
}

void Device::AddSleepWord(uint32_t* word) {
  {
    std::lock_guard lock(words_mu_);
    // As BAR0's word says now: a word added to a sleeping device is waited on from the next
    // wait, and a doorbell before that is seen by the wakeup the nudge below makes.
    std::atomic_ref<uint32_t>(*word).store(0, std::memory_order_seq_cst);
    client_words_.push_back(word);
  }
  thread_->Nudge();
}

void Device::RemoveSleepWord(uint32_t* word) {
  {
    std::lock_guard lock(words_mu_);
    std::erase(client_words_, word);
  }
  thread_->Nudge();
}

void Device::ReleaseStall() {
  queue_.ReleaseStall();
  Kick();
}

void Device::Tick(std::chrono::steady_clock::time_point now) {
  // Only this thread writes the count: a load and a store, no locked increment.
  wakeups_.store(wakeups_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (initializing_ && now - born_ >= config_.init_delay) {
    bar_.SetInitializing(false);
    initializing_ = false;
  }
  bar_.SetInternalTimer(engine_.DeviceNs(now));
  bar_.RestoreReadOnly();
  if (!health_stopped_.load(std::memory_order_relaxed)) bar_.TickHealthCounter();
}

Device::ServiceResult Device::Service(std::chrono::steady_clock::time_point now) {
  Tick(now);
  if (initializing_) return {};
  // Taken before the pass: a kick that lands during it asks for another.
  if (kicked_.load(std::memory_order_relaxed)) kicked_.exchange(false, std::memory_order_acq_rel);
  // The data path runs before the commands found in this pass: a command sees the work rung
  // before it executed (a CQ resize finds the completions of sends posted before it, as on
  // hardware, where the engine does not wait for the command interface). A pass that ran
  // commands gets a second engine pass for what they changed.
  Engine::PassResult pass = engine_.Pass(now);
  if (queue_.Poll(now) > 0) {
    const Engine::PassResult after = engine_.Pass();
    pass.progressed |= after.progressed;
    pass.next_deadline_ns = after.next_deadline_ns;
  }
  ServiceResult r{.progressed = pass.progressed};
  if (pass.next_deadline_ns != 0)
    r.deadline = born_ + std::chrono::nanoseconds(pass.next_deadline_ns);
  progressed_ = r.progressed;
  deadline_ = r.deadline;
  return r;
}

}  // namespace onchip::sim
