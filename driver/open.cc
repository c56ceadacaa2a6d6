#include "driver/open.h"

#include <cerrno>
#include <mutex>

#include "driver/bus/sim/sim_bus.h"
#include "driver/bus/simd/simd_client.h"
#include "driver/bus/vfio/vfio_bus.h"
#include "driver/umr_queue.h"

namespace onchip::driver {
namespace {

constexpr std::string_view kSim = "sim";
constexpr std::string_view kSimDaemon = "simd:";
constexpr std::string_view kVfio = "vfio:";

struct Makers {
  std::mutex mu;
  FunctionMaker sim = nullptr;
};

Makers& TheMakers() {
  static Makers makers;
  return makers;
}

Result<std::unique_ptr<bus::Bus>> SoftwareBus(const Locator& locator) {
  FunctionMaker maker;
  {
    Makers& m = TheMakers();
    std::lock_guard lock(m.mu);
    maker = m.sim;
  }
  if (maker == nullptr)
    return Fail(ENODEV,
                "open: no in-process software ConnectX in this program (link "
                "//tools/plugin:embedded_sim)");
  ONCHIP_TRY(std::unique_ptr<vpci::Function> function, maker(locator.address));
  ONCHIP_TRY(auto sim_bus, bus::SimBus::Open(std::move(function)));
  return std::unique_ptr<bus::Bus>(std::move(sim_bus));
}

}  // namespace

Result<Locator> Locator::Parse(std::string_view text) {
  if (text == kSim) return Sim();
  if (text.starts_with(kSimDaemon)) {
    if (text.size() == kSimDaemon.size()) return Fail(EINVAL, "locator: simd: needs a socket path");
    return Locator{Scheme::kSimDaemon, std::string(text.substr(kSimDaemon.size()))};
  }
  if (text.starts_with(kVfio)) {
    if (text.size() == kVfio.size()) return Fail(EINVAL, "locator: vfio: needs a PCI address");
    return Vfio(text.substr(kVfio.size()));
  }
  return Fail(EINVAL, "locator: not sim, simd:<socket> or vfio:<PCI address>");
}

std::string Locator::str() const {
  switch (scheme) {
    case Scheme::kSim: return std::string(kSim);
    case Scheme::kSimDaemon: return std::string(kSimDaemon) + address;
    case Scheme::kVfio: return std::string(kVfio) + address;
    case Scheme::kFunction: return "function";
  }
  return {};
}

void RegisterFunctionMaker(Locator::Scheme scheme, FunctionMaker maker) {
  Makers& m = TheMakers();
  std::lock_guard lock(m.mu);
  if (scheme == Locator::Scheme::kSim) m.sim = maker;
}

Result<std::shared_ptr<Device>> Open(const Locator& locator, DeviceOptions opts) {
  std::unique_ptr<bus::Bus> reached;
  if (locator.scheme == Locator::Scheme::kSimDaemon) {
    // A function the daemon brought up: attach to it, commands through its channel.
    ONCHIP_TRY(bus::simd::Attachment a, bus::simd::Attach(locator.address));
    ONCHIP_TRY(auto sim_bus, bus::SimBus::Open(std::move(a.function), a.iova_base));
    // The bus owns the function, which holds the connection: the bus outlives every call.
    a.connection->OnDeath([b = sim_bus.get()] { b->MarkGone(); });
    return Device::Attach(std::move(sim_bus), std::move(a.commander), std::move(a.owner));
  }
  if (locator.scheme == Locator::Scheme::kVfio) {
    ONCHIP_TRY(reached, bus::VfioBus::Open(locator.address));
  } else if (locator.scheme == Locator::Scheme::kFunction) {
    if (locator.function == nullptr) return Fail(EINVAL, "open: a function locator without a function");
    ONCHIP_TRY(reached, bus::SimBus::Open(*locator.function));
  } else {
    ONCHIP_TRY(reached, SoftwareBus(locator));
  }
  return Device::Open(std::move(reached), opts, &UmrQueue::Create);
}

Result<std::shared_ptr<Device>> Open(std::string_view locator, DeviceOptions opts) {
  ONCHIP_TRY(const Locator parsed, Locator::Parse(locator));
  return Open(parsed, opts);
}

}  // namespace onchip::driver
