#include "driver/copy_kernels.h"

namespace onchip::driver {
namespace {

// Both targets are windows of the one BAR0 mapping (Bar0Window); each is asked for on its own
// so that a bus that maps them differently needs no change here.
mmio::MemoryType DmMemory(const bus::Bus& bus) { return bus.window_memory().type; }
mmio::MemoryType BlueFlameMemory(const bus::Bus& bus) { return bus.window_memory().type; }

}  // namespace

CopyKernels ChooseCopyKernels(const bus::Bus& bus) {
  return {&mmio::ToDeviceFor(DmMemory(bus)), &mmio::ToDeviceFor(BlueFlameMemory(bus))};
}

std::string DescribeCopyKernels(const bus::Bus& bus) {
  const bus::Bus::WindowMemory window = bus.window_memory();
  const mmio::MemoryType dm = DmMemory(bus), blueflame = BlueFlameMemory(bus);
  std::string text = "to-device ";
  text += mmio::ToDeviceReport(dm);
  if (blueflame == dm) {
    text += " for DM and BlueFlame";
  } else {
    text += " for DM; ";
    text += mmio::ToDeviceReport(blueflame);
    text += " for BlueFlame";
  }
  text += ", whose window is ";
  text += mmio::MemoryTypeName(window.type);
  text += " (";
  text += window.source;
  text += "); from-device ";
  text += mmio::FromDeviceReport();
  return text;
}

}  // namespace onchip::driver
