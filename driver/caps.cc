#include "driver/caps.h"

#include <algorithm>

#include "driver/cmd/run.h"

namespace onchip::driver {

prm::Bits Caps::View(prm::CapType type, prm::CapMode mode) const {
  auto it = pages_.find(prm::QueryCapOpMod(type, mode));
  if (it == pages_.end()) {
    return prm::Bits(std::span<std::byte>(zeroes_));
  }
  return prm::Bits(std::span<std::byte>(const_cast<std::vector<std::byte>&>(it->second)));
}

void Caps::Store(prm::CapType type, prm::CapMode mode, std::span<const std::byte> page) {
  std::vector<std::byte> bytes(kPageBytes);
  std::copy_n(page.begin(), std::min(page.size(), kPageBytes), bytes.begin());
  pages_[prm::QueryCapOpMod(type, mode)] = std::move(bytes);
}

Result<void> Caps::Query(cmd::Commander& commander, prm::CapType type, prm::CapMode mode) {
  prm::Message<prm::query_hca_cap_in> in;
  in.set(prm::query_hca_cap_in::opcode, prm::QUERY_HCA_CAP)
      .set(prm::query_hca_cap_in::op_mod, prm::QueryCapOpMod(type, mode));
  ONCHIP_TRY(auto out, cmd::Run<prm::query_hca_cap_out>(commander, in));
  Store(type, mode, out.region(prm::query_hca_cap_out::capability));
  return {};
}

}  // namespace onchip::driver
