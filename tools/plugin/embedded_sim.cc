// The software ConnectX as the device behind the "sim" locator (driver/open.h): linking this
// library into a program (the libibverbs plugin, tools, benchmarks) registers it. driver/ never
// names tools/sim; this build rule is the one place the two meet.
#include <memory>
#include <string_view>

#include "driver/open.h"
#include "tools/sim/device.h"

namespace onchip::plugin {
namespace {

Result<std::unique_ptr<vpci::Function>> MakeEmbeddedSim(std::string_view address) {
  if (!address.empty()) return Fail(EINVAL, "sim: the in-process device takes no address");
  ONCHIP_TRY(std::unique_ptr<sim::Device> device, sim::Device::Create());
  return std::unique_ptr<vpci::Function>(std::move(device));
}

[[maybe_unused]] const bool registered = [] {
  driver::RegisterFunctionMaker(driver::Locator::Scheme::kSim, MakeEmbeddedSim);
  return true;
}();

}  // namespace
}  // namespace onchip::plugin
