#include "driver/port.h"

#include "driver/cmd/run.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

namespace {
constexpr uint8_t kIbPortActive = 4, kIbPortDown = 1;
constexpr uint8_t kIbPhysLinkUp = 5, kIbPhysDisabled = 3;
}  // namespace

bool IsInfiniBand(const Device& device) { return IsInfiniBand(device.caps()); }

uint32_t GidTableSize(const Device& device) { return GidTableSize(device.caps()); }

Result<PortInfo> QueryPort(Device& device) {
  PortInfo info;
  if (!IsInfiniBand(device)) {
    using In = prm::query_vport_state_in;
    prm::Message<In> in;
    in.set(In::opcode, prm::QUERY_VPORT_STATE);  // op_mod 0: this function's NIC vport
    ONCHIP_TRY(auto out, cmd::Run<prm::query_vport_state_out>(device.commander(), in));
    info.link_up = out.get(prm::query_vport_state_out::state) == prm::MLX5_VPORT_STATE_UP;
    info.state = info.link_up ? kIbPortActive : kIbPortDown;
    // mlx5_ib shows a RoCE port whose link is down as Disabled.
    info.phys_state = info.link_up ? kIbPhysLinkUp : kIbPhysDisabled;
    return info;
  }
  using In = prm::query_hca_vport_context_in;
  using Out = prm::query_hca_vport_context_out;
  using Ctx = prm::hca_vport_context_bits<Out::hca_vport_context.bit_offset>;
  prm::Message<In> in;
  // port_num 0: the function's only port (mlx5_core names one only on dual-port devices).
  in.set(In::opcode, prm::QUERY_HCA_VPORT_CONTEXT);
  ONCHIP_TRY(auto out, cmd::Run<Out>(device.commander(), in));
  info.infiniband = true;
  info.state = static_cast<uint8_t>(out.get(Ctx::vport_state));
  info.phys_state = static_cast<uint8_t>(out.get(Ctx::port_physical_state));
  info.link_up = info.state == kIbPortActive;
  info.lid = static_cast<uint16_t>(out.get(Ctx::lid));
  info.sm_lid = static_cast<uint16_t>(out.get(Ctx::sm_lid));
  info.lmc = static_cast<uint8_t>(out.get(Ctx::lmc));
  info.sm_sl = static_cast<uint8_t>(out.get(Ctx::sm_sl));
  info.subnet_timeout = static_cast<uint8_t>(out.get(Ctx::subnet_timeout));
  info.init_type_reply = static_cast<uint8_t>(out.get(Ctx::init_type_reply));
  info.cap_mask1 = out.get(Ctx::cap_mask1);
  return info;
}

Result<bool> QueryLinkUp(Device& device) {
  ONCHIP_TRY(PortInfo info, QueryPort(device));
  return info.link_up;
}

}  // namespace onchip::driver
