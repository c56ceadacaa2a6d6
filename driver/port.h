// Port 1 as the firmware reports it.
//   - Ethernet (RoCE; cmd_hca_cap.port_type 1): QUERY_VPORT_STATE of this function's NIC vport,
//     whose state is the port's link (what mlx5_ib reports as a RoCE port's state).
//   - InfiniBand (port_type 0): QUERY_HCA_VPORT_CONTEXT, the port as the subnet manager set it
//     up: LID, LMC, SM LID and SL, subnet timeout, capability mask, logical and physical state
//     (what mlx5_ib's mlx5_query_hca_port reports).
// A link that goes down or up also raises PORT_CHANGE, which the event thread turns into
// IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE (driver/events.h).
#pragma once

#include <cstdint>

#include "driver/device.h"
#include "uapi/result.h"

namespace onchip::driver {

// IsInfiniBand and GidTableSize of the device's capabilities (gid_table.h).
bool IsInfiniBand(const Device& device);
uint32_t GidTableSize(const Device& device);

struct PortInfo {
  bool infiniband = false;
  bool link_up = true;
  uint8_t state = 4;       // IBTA PortState: 1 DOWN, 4 ACTIVE (ibv_port_state's values)
  uint8_t phys_state = 5;  // IBTA PortPhysicalState: 3 Disabled, 5 LinkUp
  // InfiniBand only (0 on Ethernet):
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t lmc = 0;
  uint8_t sm_sl = 0;
  uint8_t subnet_timeout = 0;
  uint8_t init_type_reply = 0;
  uint32_t cap_mask1 = 0;  // PortInfo.CapabilityMask, as ibv_port_attr.port_cap_flags
};

// The firmware's errno when the command fails (EIO once the function is gone).
Result<PortInfo> QueryPort(Device& device);
// True while the link is up.
Result<bool> QueryLinkUp(Device& device);

}  // namespace onchip::driver
