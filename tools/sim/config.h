// What the software ConnectX is: capabilities and sizes of the device a test, benchmark or the CLI
// constructs. The defaults model a ConnectX-6 Dx (fw 22.x, cmdif rev 5) with the resources
// scaled down so that tables stay small; every number the PRM exposes through a capability is a
// field here, so a test can build a device without MEMIC, with a tiny MEMIC window, without SW
// ICM, without BlueFlame, and so on.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace onchip::sim {

struct DeviceConfig {
  // ---- identity (init segment) ----
  uint16_t fw_rev_major = 22;
  uint16_t fw_rev_minor = 39;
  uint16_t fw_rev_subminor = 1002;
  uint32_t hw_id = 0x101d;  // health_buffer.hw_id; the ConnectX-6 Dx PCI device id, for show

  // ---- command queue ----
  uint8_t log_cmdq_size = 5;    // 32 entries
  uint8_t log_cmdq_stride = 6;  // 64-byte entries

  // ---- pages the firmware asks for (QUERY_PAGES) ----
  uint32_t boot_pages = 16;
  uint32_t init_pages = 64;
  uint32_t max_pages_held = 1 << 16;

  // ---- UARs: ALLOC_UAR hands out indices first_uar_index .. first_uar_index + num_uars - 1;
  // UAR index i is the 4 KiB page at BAR0 offset i * 4 KiB. The init segment occupies the pages
  // below first_uar_index.
  uint32_t first_uar_index = 8;
  uint32_t num_uars = 256;  // one or more per context: a device daemon's clients each take theirs
  bool bf = true;              // BlueFlame registers at UAR offset 0x800
  uint8_t log_bf_reg_size = 9;  // 512-byte BlueFlame registers

  // ---- limits (log2 of the table sizes the general capability advertises) ----
  uint8_t log_max_pd = 16;
  uint8_t log_max_xrcd = 16;  // XRC domain numbers 1 .. 2^log_max_xrcd - 1
  uint8_t log_max_transport_domain = 12;
  uint8_t log_max_mkey = 16;
  uint8_t log_max_klm_list_size = 16;
  uint8_t log_max_mrw_sz = 48;

  // ---- event and completion queues ----
  // A ConnectX function has hundreds of EQs and MSI-X vectors; each client of a device daemon
  // takes one EQ and one vector (its own interrupts), so these bound the clients with events.
  uint8_t log_max_eq = 8;       // EQ numbers 0 .. 2^log_max_eq - 1 (8-bit eq_number: at most 8)
  uint16_t max_num_eqs = 256;   // advertised beside log_max_eq; the smaller bound wins
  uint8_t log_max_eq_sz = 22;   // EQEs per EQ
  uint16_t num_interrupt_vectors = 128;  // eqc.intr must be below this (the MSI-X vectors modelled)
  uint8_t log_max_cq = 12;      // CQ numbers 0 .. 2^log_max_cq - 1
  uint8_t log_max_cq_sz = 22;   // CQEs per CQ
  bool cq_resize = true;        // MODIFY_CQ op_mod 1 (cmd_hca_cap.cq_resize)

  // ---- queue pairs and shared receive queues ----
  uint8_t log_max_qp = 12;        // QP numbers: 2^log_max_qp - 2, from 2 (0 and 1 are the special QPs)
  uint8_t log_max_qp_sz = 15;     // WQEs (send: 64-byte basic blocks) per QP ring
  uint8_t log_max_srq = 10;       // SRQ numbers 0 .. 2^log_max_srq - 1
  uint8_t log_max_srq_sz = 15;    // WQEs per SRQ
  uint16_t max_wqe_sz_sq = 1024;  // bytes in one send WQE (16 basic blocks)
  uint16_t max_wqe_sz_rq = 512;   // bytes in one receive WQE (stride)
  // Ethernet work queues (the SQs and RQs of raw packet QPs take their numbers from the QP
  // numbers) and the transport objects: TISes (one per SQ) and TIRs (direct dispatch only).
  uint8_t log_max_wq_sz = 15;     // WQEs per SQ / RQ
  uint8_t log_max_tis = 10;
  uint8_t log_max_tir = 10;
  uint8_t log_max_msg = 30;       // message size limit (qpc.log_msg_max)
  uint8_t log_max_ra_req_qp = 4;  // outstanding RDMA reads and atomics a QP initiates (log_sra_max)
  uint8_t log_max_ra_res_qp = 4;  // ... and answers (log_rra_max)
  uint8_t num_ports = 1;          // vhca_port_num 1..num_ports
  uint8_t max_mtu = 5;            // largest qpc.mtu: 5 = 4096 bytes
  // Entries in a RoCE port's GID table (roce_address_table_size; src_addr_index must be below
  // it). The first four hold the RoCE v1 and v2 GIDs of the port's link-local and IPv4-mapped
  // addresses, the rest are empty, as on a real port (gid_table.h).
  uint16_t roce_address_table_size = 16;

  // ---- MEMIC (device_mem_cap) ----
  bool memic = true;
  uint32_t memic_bar_size = 256 * 1024;  // a multiple of 4 KiB, at most 256 pages (the kernel's bitmap)
  uint32_t max_memic_size = 256 * 1024;
  uint8_t log_max_memic_addr_alignment = 12;  // in 64-byte units: 2^12 * 64 = 256 KiB

  // ---- SW ICM: one area per type; log size 0 = area absent ----
  bool sw_icm = true;
  uint8_t log_sw_icm_alloc_granularity = 12;  // 4 KiB blocks
  uint8_t log_steering_sw_icm_size = 22;      // 4 MiB
  uint8_t log_header_modify_sw_icm_size = 20;
  uint8_t log_header_modify_pattern_sw_icm_size = 20;
  uint8_t log_indirect_encap_sw_icm_size = 20;
  bool sw_owner = true;     // flow-table caps, RX and TX
  bool sw_owner_v2 = true;

  // ---- mkeys ----
  bool mkey_pcie_tph = true;
  uint16_t pcie_tph_steering_tags = 64;  // valid pcie_tph_steering_tag_index values: 0..n-1
  bool imaicl = true;                    // memory windows

  // ---- transport ----
  // How often the device looks at its doorbells without a Kick(), and advances the health
  // counter and the internal timer. Idle cost is one wakeup per period.
  std::chrono::milliseconds idle_poll_period{4};
  // How long the data engine keeps polling its doorbells after the last work it found before it
  // sets the sleep word (uapi/vpci.h) and waits for a doorbell's wake-up, while it spins at all.
  std::chrono::microseconds engine_idle_period{1000};
  // Whether the engine spins on its doorbells between passes (no wake-up to pay for the next
  // doorbell) or sleeps as soon as a pass finds nothing (the next doorbell pays one futex
  // wake-up). kWhenCpuSpare spins only while the machine has a CPU nobody else wants
  // (cpu_room.h): a spinner on a full machine takes the CPU of a poller it then waits for.
  enum class Spin : uint8_t { kWhenCpuSpare, kAlways, kNever };
  Spin engine_spin = Spin::kWhenCpuSpare;
  // The scheduling class the engine's thread asks for. kRealtimeWhenPermitted: SCHED_FIFO at
  // the lowest priority where the process may have it (CAP_SYS_NICE, or an RLIMIT_RTPRIO of at
  // least 1), so that a doorbell's wake-up runs the engine at once, as a NIC's engine never
  // waits for a CPU; a normal thread's wake-up can wait out a spinning poller's whole slice
  // (about 2 ms on 2 CPUs). Elsewhere, and with kNormal, a normal thread that asks for a short
  // slice (device_thread.h). With engine_spin kAlways the thread stays normal: a realtime
  // spinner would starve the pollers it serves.
  enum class Sched : uint8_t { kRealtimeWhenPermitted, kNormal };
  Sched engine_sched = Sched::kRealtimeWhenPermitted;

  // ---- port 1's link layer: a ConnectX (VPI) port runs Ethernet (RoCE) or InfiniBand, and
  // cmd_hca_cap.port_type says which (PRM encoding below).
  enum class PortType : uint8_t { kInfiniBand = 0, kEthernet = 1 };
  PortType port_type = PortType::kEthernet;
  // InfiniBand only: the port's LID. 0 lets the fabric's subnet manager assign one (the lowest
  // free unicast LID, unique among the process's devices, wire.h Fabric); another value asks
  // for exactly that LID, and Device::Create fails with EADDRINUSE when a device holds it.
  // Device::config() shows the LID in use.
  uint16_t lid = 0;

  // ---- port 1's addresses: where its GIDs come from (wire.h DeviceGids). Devices in one
  // process reach each other by GID, so each needs its own: give every further device another
  // mac and ipv4. The defaults are the ones the verbs environment's sysfs tree advertises. On
  // InfiniBand the MAC only names the node: its GUID (OUI, 03:00, the NIC part) and the port's
  // one GID (fe80::/64 + that GUID).
  std::array<uint8_t, 6> mac{0x0c, 0x42, 0xa1, 0x4f, 0x00, 0x01};
  uint32_t ipv4 = 0x7f000001;  // 127.0.0.1

  // How long `initializing` stays set after construction.
  std::chrono::milliseconds init_delay{0};
};

// `base` as device `index` of a process: its MAC's last byte and its IPv4 address advanced by
// `index`, so that its GIDs are its own (device 0 keeps the defaults). A daemon's function i,
// and a test's or benchmark's i-th device, are configured so.
inline DeviceConfig NthDevice(DeviceConfig base, uint32_t index) {
  base.mac[5] = static_cast<uint8_t>(base.mac[5] + index);
  base.ipv4 += index;
  return base;
}

// The node GUID a Mellanox function derives from its MAC (OUI, 03:00, the NIC part), host
// order, as the verbs environment's sysfs tree writes it; port 1's GUID is the same.
inline uint64_t NodeGuid(const DeviceConfig& config) {
  const auto& m = config.mac;
  const uint8_t b[8] = {m[0], m[1], m[2], 0x03, 0x00, m[3], m[4], m[5]};
  uint64_t guid = 0;
  for (uint8_t x : b) guid = guid << 8 | x;
  return guid;
}

}  // namespace onchip::sim
