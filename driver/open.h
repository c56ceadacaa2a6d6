// Opening a device: the one way every caller (the libibverbs provider, the C++ API, tools and
// benchmarks) turns a name into a brought-up driver::Device.
//
// A locator names one PCI function:
//   "sim"                  the software ConnectX inside this process
//   "simd:<socket path>"   a software ConnectX served by a device daemon over a UNIX socket
//                          (function 0; "simd:<socket path>#<n>" names function n)
//   "vfio:<PCI address>"   a ConnectX bound to vfio-pci, e.g. "vfio:0000:3b:00.0"
// and, with no text form, Locator::Of(function): a virtual PCI function the caller made and owns
// (a test's or a tool's own software ConnectX), opened as the in-process "sim" is.
// Only the bus under the driver differs between them: the software ones are a vpci::Function
// (uapi/vpci.h) under the sim bus, the real one is the VFIO bus.
//
// driver/ never names the software ConnectX. The in-process device registers a maker for "sim"
// (RegisterFunctionMaker) from a library that only the libibverbs plugin's build rule and tools
// link in (tools/plugin); without it "sim" answers ENODEV, saying what to link. "simd:" needs no
// maker: the daemon's client (driver/bus/simd) speaks uapi/simd_protocol.h and attaches to a
// function the daemon brought up (Device::Attach).
//
//   ONCHIP_TRY(auto device, driver::Open("sim"));
//   ONCHIP_TRY(auto device, driver::Open(driver::Locator::Vfio("0000:3b:00.0")));
//   ONCHIP_TRY(auto device, driver::Open(driver::Locator::Of(*sim_device)));
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "driver/device.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::driver {

struct Locator {
  enum class Scheme : uint8_t { kSim, kSimDaemon, kVfio, kFunction };
  Scheme scheme = Scheme::kSim;
  std::string address;  // the socket path (simd) or PCI address (vfio); empty for sim
  vpci::Function* function = nullptr;  // kFunction: the caller's, outliving the device

  static Locator Sim() { return {Scheme::kSim, {}}; }
  static Locator Vfio(std::string_view pci) { return {Scheme::kVfio, std::string(pci)}; }
  static Locator Of(vpci::Function& f) { return {Scheme::kFunction, {}, &f}; }
  // EINVAL (with the reason) for anything but the three text forms above.
  static Result<Locator> Parse(std::string_view text);
  std::string str() const;
};

// Makes the virtual PCI function a software scheme names (`address` as in the locator).
using FunctionMaker = Result<std::unique_ptr<vpci::Function>> (*)(std::string_view address);

// Registers (or replaces) the maker of the in-process scheme (kSim; other schemes are ignored).
// Thread-safe; makers registered from static initialisers are seen by every later Open.
void RegisterFunctionMaker(Locator::Scheme scheme, FunctionMaker maker);

// Makes the bus the locator names and brings the device up on it. The function behind a
// software bus is owned by the bus and stops after the driver is done with it.
Result<std::shared_ptr<Device>> Open(const Locator& locator, DeviceOptions opts = {});
Result<std::shared_ptr<Device>> Open(std::string_view locator, DeviceOptions opts = {});

}  // namespace onchip::driver
