#include "driver/device.h"

#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>

#include "uapi/prm/caps.h"

#include "driver/eq.h"
#include "driver/events.h"
#include "driver/hca.h"
#include "driver/pages.h"
#include "driver/steering_tags.h"
#include "driver/uar.h"

namespace onchip::driver {

uint32_t TeardownReport::objects() const {
  uint32_t n = 0;
  for (uint32_t k : released) n += k;
  return n;
}

std::string TeardownReport::describe() const {
  std::string out = "teardown: released";
  bool any = false;
  for (std::size_t k = 0; k < kObjectKinds; ++k) {
    if (released[k] == 0) continue;
    out += (any ? ", " : " ") + std::to_string(released[k]) + " " +
           KindName(static_cast<ObjectKind>(k)) + (released[k] == 1 ? "" : "(s)");
    any = true;
  }
  if (!any) out += " no live object";
  out += "; " + std::to_string(pages_reclaimed) + " page(s) reclaimed, " +
         std::to_string(pages_still_held) + " held by firmware";
  if (first_error) out += "; first error: " + first_error->describe();
  return out;
}

namespace {

// Every context a live device serves (its embedded one, a provider's) -> that device.
std::mutex& ContextsMu() {
  static std::mutex mu;
  return mu;
}
// A served context: its device, and the uverbs file it is a face of (0: a file of its own).
struct Served {
  Device* device;
  uint64_t file;
};
std::map<ibv_context*, Served>& ServedContexts() {
  static std::map<ibv_context*, Served> contexts;
  return contexts;
}

}  // namespace

void Device::Serve(ibv_context* context, uint64_t file) {
  std::lock_guard lock(ContextsMu());
  ServedContexts()[context] = {this, file};
}

void Device::StopServing(ibv_context* context) {
  std::lock_guard lock(ContextsMu());
  auto it = ServedContexts().find(context);
  if (it != ServedContexts().end() && it->second.device == this) ServedContexts().erase(it);
}

Device* Device::FromVerbs(ibv_context* ctx) {
  std::lock_guard lock(ContextsMu());
  auto it = ServedContexts().find(ctx);
  return it == ServedContexts().end() ? nullptr : it->second.device;
}

bool Device::SameFile(const ibv_context* a, const ibv_context* b) {
  if (a == b) return true;
  std::lock_guard lock(ContextsMu());
  auto x = ServedContexts().find(const_cast<ibv_context*>(a));
  auto y = ServedContexts().find(const_cast<ibv_context*>(b));
  return x != ServedContexts().end() && y != ServedContexts().end() && x->second.file != 0 &&
         x->second.file == y->second.file && x->second.device == y->second.device;
}

void Device::HoldContextsForFork() { ContextsMu().lock(); }
void Device::ReleaseContextsAfterFork() { ContextsMu().unlock(); }

Device::Device(std::unique_ptr<bus::Bus> bus) : bus_(std::move(bus)) {
  registry_.SetGoneFlag(&bus_->gone_flag());
  verbs_.cmd_fd = -1;
  verbs_.async_fd = -1;
  verbs_.num_comp_vectors = 1;  // the one completion EQ
  std::lock_guard lock(ContextsMu());
  ServedContexts()[&verbs_] = {this, 0};
}

Result<std::shared_ptr<Device>> Device::Open(std::unique_ptr<bus::Bus> bus, DeviceOptions opts,
                                             RegistrationQueueMaker make_umr) {
  if (!bus) return Fail(EINVAL, "device: no bus");
  std::shared_ptr<Device> device(new Device(std::move(bus)));
  device->make_umr_ = make_umr;
  if (auto up = device->BringUp(opts); !up) {
    device->Close();  // unwinds whatever part of bring-up succeeded
    return std::unexpected(up.error());
  }
  return device;
}

Result<std::shared_ptr<Device>> Device::Attach(std::unique_ptr<bus::Bus> bus,
                                               std::unique_ptr<cmd::Commander> commander,
                                               std::unique_ptr<cmd::OwnerChannel> owner) {
  if (!bus || !commander) return Fail(EINVAL, "device: no bus or no commander");
  std::shared_ptr<Device> device(new Device(std::move(bus)));
  device->remote_commander_ = std::move(commander);
  device->owner_ = std::move(owner);
  device->commander_ = device->remote_commander_.get();
  auto up = [&]() -> Result<void> {
    ONCHIP_TRY(alloc::ProviderOptions memory, alloc::ProviderOptions::FromEnvironment());
    memory.mapper = device->bus_.get();
    ONCHIP_TRY(device->memory_, alloc::MemoryProvider::Create(memory));
    device->pages_ = std::make_unique<PageSupply>(*device->memory_);
    ONCHIP_CHECK(hca::QueryCaps(*device->commander_, device->caps_));
    return device->Serve();
  }();
  if (!up) {
    device->Close();
    return std::unexpected(up.error());
  }
  return device;
}

Result<void> Device::BringUp(const DeviceOptions& opts) {
  ONCHIP_CHECK(hca::WaitFirmwareReady(*bus_, opts.firmware_ready_timeout));
  ONCHIP_TRY(alloc::ProviderOptions memory, alloc::ProviderOptions::FromEnvironment());
  memory.mapper = bus_.get();
  ONCHIP_TRY(memory_, alloc::MemoryProvider::Create(memory));
  ONCHIP_TRY(cmdq_, cmd::Cmdq::Create(*bus_, *memory_, opts.cmdq));
  commander_ = cmdq_.get();
  pages_ = std::make_unique<PageSupply>(*memory_);
  ONCHIP_CHECK(hca::WaitFirmwareReady(*bus_, opts.firmware_ready_timeout));
  ONCHIP_CHECK(hca::EnableHca(*cmdq_));
  enabled_ = true;
  ONCHIP_CHECK(hca::SetIssi(*cmdq_));
  ONCHIP_CHECK(pages_->Satisfy(*cmdq_, prm::BOOT_PAGES));
  ONCHIP_CHECK(hca::SetHostEndianness(*cmdq_));
  ONCHIP_CHECK(hca::SetCaps(*cmdq_, caps_));
  ONCHIP_CHECK(pages_->Satisfy(*cmdq_, prm::INIT_PAGES));
  ONCHIP_CHECK(hca::InitHca(*cmdq_));
  initialized_ = true;
  ONCHIP_CHECK(hca::SetDriverVersion(*cmdq_, caps_));
  ONCHIP_CHECK(hca::QueryCaps(*cmdq_, caps_));
  return Serve();
}

Result<void> Device::Serve() {
  ONCHIP_TRY(gid_table_, GidTable::Query(*commander_, caps_));
  memic_.Configure(caps_, bus_->bar0_size());
  sw_icm_.Configure(caps_);
  uars_ = std::make_unique<Uars>(*commander_, *bus_, caps_);
  // CQs need an EQ to name: the function's completion EQ, on the shared UAR (as the kernel's
  // EQs sit on a UAR of the function, not of a process).
  ONCHIP_TRY(Bfreg* shared, uars_->Shared());
  // It carries the async events too: one EQ, so one writer of the UAR page's EQ doorbell.
  ONCHIP_TRY(comp_eq_, CompletionEq::Create(*commander_, *memory_, caps_, shared->uar_index,
                                            kCompletionEventMask | kAsyncEventMask,
                                            bus_->completion_vector()));
  const bool mkey_pcie_tph = caps_.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::mkey_pcie_tph) != 0;
  // An attached function's ST table is its owner's (steering_tags.h).
  steering_tags_ = owner_ ? std::make_unique<SteeringTagTable>(*owner_, mkey_pcie_tph)
                          : std::make_unique<SteeringTagTable>(*bus_, bus_->tph(), mkey_pcie_tph);
  // The thread that consumes the EQ's completions and async events (events.h).
  if (bus_->InterruptFd(bus_->completion_vector()) >= 0) {
    ONCHIP_TRY(events_, EventThread::Start(*bus_, {comp_eq_.get()}));
  }
  return {};
}

uint32_t Device::comp_eqn() const { return comp_eq_ ? comp_eq_->eqn() : 0; }

Device::~Device() {
  Close();
  std::lock_guard lock(ContextsMu());
  std::erase_if(ServedContexts(), [this](const auto& served) { return served.second.device == this; });
}

Result<RegistrationQueue*> Device::UmrQueueLocked() {
  if (registry_.closed()) return Fail(EIO, "umr: device closed");
  if (umr_ && umr_->broken()) {
    (void)umr_->Destroy(*commander_);  // a refused destroy leaves it to the function's teardown
    umr_.reset();
  }
  if (!umr_) {
    if (make_umr_ == nullptr) return Fail(EOPNOTSUPP, "umr: no registration queue maker");
    ONCHIP_TRY(umr_, make_umr_(*this));
  }
  return umr_.get();
}

Result<void> Device::UpdateMkeyInPlace(uint32_t mkey, const cmd::MkeyUpdate& update) {
  if (attached()) {
    if (!owner_) return Fail(EOPNOTSUPP, "umr: the function's owner offers no in-place update");
    return owner_->UpdateMkey(mkey, update);
  }
  // umr_mu_ from finding the queue to its completion: a queue that another caller finds broken
  // is replaced (and Close destroys it) only while nobody is posting on it.
  std::lock_guard lock(umr_mu_);
  auto umr = UmrQueueLocked();
  if (!umr) return Fail(EOPNOTSUPP, "umr: no registration queue could be made");
  return (*umr)->UpdateMkey(mkey, update);
}

TeardownReport Device::Close() {
  TeardownReport report;
  auto note = [&](const Result<void>& r) {
    if (!r && !report.first_error) report.first_error = r.error();
  };
  // Refuses new work, waits for what is in flight, releases every object children first.
  std::optional<ReleaseCounts> counts = registry_.Close();
  if (!counts) return report;  // closed before
  // No event is dispatched past this point; the EQs can go.
  if (events_) events_->Stop();
  report.released = counts->released;
  report.first_error = counts->first_error;

  // The registration queue's CQ reports to the completion EQ: it goes first.
  {
    std::lock_guard lock(umr_mu_);
    if (umr_) {
      note(umr_->Destroy(*commander_));
      umr_.reset();
    }
  }
  // Every CQ is gone (the registry released them), so the EQ goes, then the UAR under it.
  if (comp_eq_) {
    if (auto destroyed = comp_eq_->Destroy(*commander_); destroyed) comp_eq_.reset();
    else note(destroyed);
  }
  if (uars_) note(uars_->ReleaseShared());

  if (cmdq_ && enabled_) {
    if (initialized_) note(hca::TeardownHca(*cmdq_, caps_));
    auto reclaimed = pages_->ReclaimAll(*cmdq_);
    if (reclaimed) report.pages_reclaimed = *reclaimed;
    else note(std::unexpected(reclaimed.error()));
    note(hca::DisableHca(*cmdq_));
  }
  if (pages_) report.pages_still_held = pages_->held();
  initialized_ = enabled_ = false;
  return report;
}

}  // namespace onchip::driver
