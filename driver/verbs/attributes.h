// ibv_query_device(_ex) and ibv_query_port answers, computed from the capabilities the driver
// queried (QUERY_HCA_CAP), the way mlx5_ib turns the same capabilities into ib_device_attr and
// ib_port_attr. Identity that the kernel would take from PCI config space or the vport context
// (vendor and part id, node GUIDs) comes from the identity below; the sysfs tree that
// `tools/onchip run` writes is the source of the GUIDs, so sysfs and query_device agree.
//
// These describe what the device can do through onchip: each limit is what the queried
// capabilities allow for the objects onchip creates, computed as mlx5_ib does.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>

#include "driver/device.h"
#include "driver/port.h"

namespace onchip::driver::verbs {

// PCI identity of a ConnectX-6 Dx function.
inline constexpr uint32_t kMellanoxVendorId = 0x02c9;  // IEEE OUI, as mlx5_ib reports vendor_id
inline constexpr uint32_t kConnectX6DxPartId = 4125;   // PCI device id 0x101d

struct Identity {
  uint64_t fw_ver = 0;          // major << 32 | minor << 16 | subminor
  uint64_t node_guid = 0;       // host order
  uint64_t sys_image_guid = 0;  // host order
  uint32_t gid_table_len = 0;   // GIDs published for port 1 (sysfs ports/1/gids/*)
};

// Every field of ibv_device_attr_ex (comp_mask 0; unsupported features zero).
ibv_device_attr_ex DeviceAttributes(const driver::Device& device, const Identity& id);

// mlx5dv_query_device's answer, as libmlx5 gives it (rdma-core providers/mlx5/mlx5.c
// _mlx5dv_query_device): version 0; flags for what the context's CQs and queues are; of the
// comp_mask bits the caller set, those libmlx5 answers whatever the device (compression,
// parsing, striding RQ, tunnel offloads, dynamic bfregs, flow actions, DC ODP, signature, DCI
// streams, memcpy length, crypto) are filled and kept, those it answers only when the device has
// the feature (clock info page, core clock mapping, LAG ports) are kept only then, and every
// other bit is cleared. Fields not answered are left as the caller had them. The values are what
// the device can do through onchip, from its capabilities: CQE format version 1 when
// cmd_hca_cap.cqe_version has it; dynamic bfregs (what a thread domain's dedicated doorbell
// takes) only with BlueFlame; LAG ports from cmd_hca_cap.num_lag_ports; zero for the features
// onchip offers no call for (compressed or padded CQEs, multi-packet sends, striding RQs,
// DC, signature and crypto offloads, DMA memcpy).
void DvAttributes(const driver::Device& device, mlx5dv_context* out);

// Port `port` (1-based): EINVAL if the device has no such port, else the port as mlx5_ib
// describes it from `info` (driver/port.h): a RoCE port ACTIVE and LinkUp while its link is up,
// else DOWN and Disabled; an InfiniBand port with the state, LID, SM LID, LMC and capability
// mask its vport context holds. On success fills `out` completely.
int PortAttributes(const driver::Device& device, const Identity& id, uint8_t port,
                   const driver::PortInfo& info, ibv_port_attr* out);

}  // namespace onchip::driver::verbs
