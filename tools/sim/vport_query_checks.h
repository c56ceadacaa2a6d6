// The checks the HCA vport queries share (QUERY_HCA_VPORT_CONTEXT, QUERY_HCA_VPORT_GID): they
// exist for InfiniBand ports, take op_mod 0, answer only this function's own vport, and name
// port 0 (the only port) or 1..num_ports.
#pragma once

#include <span>

#include "tools/sim/config.h"
#include "tools/sim/outcome.h"
#include "uapi/prm/field.h"
#include "uapi/sim/syndrome.h"

namespace onchip::sim {

// OK, or the firmware's refusal. `In` is the command's input layout.
template <class In>
Outcome CheckOwnIbVportQuery(std::span<const std::byte> in, const DeviceConfig& config) {
  if (prm::Get(in, In::op_mod) != 0) return BadOpMod();
  if (prm::Get(in, In::other_vport) != 0 || prm::Get(in, In::vport_number) != 0)
    return Refuse(Syndrome::CAP_OTHER_FUNCTION);
  if (prm::Get(in, In::port_num) > config.num_ports)
    return Refuse(Syndrome::PORT_NUM);
  if (config.port_type != DeviceConfig::PortType::kInfiniBand)
    return Refuse(Syndrome::PORT_NOT_IB);
  return Outcome::Ok();
}

}  // namespace onchip::sim
