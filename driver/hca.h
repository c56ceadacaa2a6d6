// The steps of HCA bring-up and teardown, in the PRM order the Linux driver uses
// (mlx5_function_enable / mlx5_function_open / mlx5_function_teardown). Each step is one or two
// firmware commands; Device::Open strings them together and unwinds on failure.
//
//   WaitFirmwareReady -> (cmdq address) -> WaitFirmwareReady -> ENABLE_HCA -> QUERY_ISSI/SET_ISSI
//   -> boot pages -> ACCESS_REG(HOST_ENDIANNESS) -> QUERY_HCA_CAP/SET_HCA_CAP -> init pages
//   -> INIT_HCA -> SET_DRIVER_VERSION -> QUERY_HCA_CAP (all types, MAX and CUR)
//   teardown: TEARDOWN_HCA -> MANAGE_PAGES TAKE until none -> DISABLE_HCA
#pragma once

#include <chrono>
#include <cstdint>

#include "driver/bus/bus.h"
#include "driver/caps.h"
#include "driver/cmd/commander.h"

namespace onchip::driver::hca {

// Polls initial_seg.initializing until it clears; ETIMEDOUT after `timeout`.
Result<void> WaitFirmwareReady(bus::Bus& bus, std::chrono::milliseconds timeout);

// The firmware revision from the init segment, packed as ibv_device_attr.fw_ver is by the
// verbs provider: major << 32 | minor << 16 | subminor.
uint64_t FirmwareVersion(const bus::Bus& bus);

Result<void> EnableHca(cmd::Commander& c);
Result<void> DisableHca(cmd::Commander& c);
// QUERY_ISSI, then SET_ISSI(1). EOPNOTSUPP if the device does not offer ISSI 1 (as rdma-core's
// VFIO driver: every layout here is the ISSI 1 one).
Result<void> SetIssi(cmd::Commander& c);
// ACCESS_REG write of HOST_ENDIANNESS (he = 0: little-endian host). A device that does not
// implement the register (BAD_OP_ERR) is fine: it then assumes the PRM default.
Result<void> SetHostEndianness(cmd::Commander& c);
// QUERY_HCA_CAP MAX and CUR of the general caps, SET_HCA_CAP with the bits the driver owns
// (cmdif_checksum = 0: no signatures; log_uar_page_sz = 0: 4 KiB host pages); then RoCE's
// sw_r_roce_src_udp_port when the device offers it.
Result<void> SetCaps(cmd::Commander& c, Caps& caps);
Result<void> InitHca(cmd::Commander& c);
// SET_DRIVER_VERSION "onchip,mlx5_core,<version>" when the general caps have driver_version.
Result<void> SetDriverVersion(cmd::Commander& c, const Caps& caps);
// MAX and CUR of GENERAL and of each type the general caps say exist: DEV_MEM (device_memory),
// FLOW_TABLE (nic_flow_table), ROCE (roce), GENERAL_2 (hca_cap_2).
Result<void> QueryCaps(cmd::Commander& c, Caps& caps);
// TEARDOWN_HCA graceful close; if the firmware refuses it (objects the driver could not
// destroy), force close; the graceful error is returned only if that fails too.
Result<void> TeardownHca(cmd::Commander& c, const Caps& caps);

}  // namespace onchip::driver::hca
