// Where things sit in the software ConnectX's BAR0, derived from a DeviceConfig.
//
//   0x00000  init segment (uapi/prm/init_seg_access.h: initial_seg and mlx5_init_seg); it
//            spans the pages below first_uar_index
//   uar i    UAR page i at i * 4 KiB for first_uar_index <= i < first_uar_index + num_uars,
//            laid out as uapi/prm/uar_page.h says (doorbells, BlueFlame registers)
//   msix     the MSI-X table, present with mkey_pcie_tph: the first 4 KiB page boundary after
//            the UARs, pcie_tph_steering_tags entries of 16 bytes (rounded up to whole pages).
//            It is also the PCIe TPH steering-tag table (ST Table Location = MSI-X table, as
//            on ConnectX): entry i's tag sits in its Vector Control dword (vpci::TphCapability).
//            No interrupts are modelled; only the ST bits of the entries mean anything.
//   memic    memic_bar_start_addr: the MEMIC window (memic_bar_size bytes), aligned to its
//            size's power of two so any alignment ALLOC_MEMIC allows is a BAR alignment too
//
// Every address the device advertises (ALLOC_UAR's index, memic_bar_start_addr, ALLOC_MEMIC's
// memic_start_addr) is an offset from the start of BAR0, as on hardware.
#pragma once

#include <bit>
#include <cstdint>

#include "tools/sim/config.h"
#include "uapi/prm/uar_page.h"
#include "uapi/vpci.h"

namespace onchip::sim {

struct BarLayout {
  uint64_t uar_start = 0;  // BAR offset of UAR page first_uar_index
  uint64_t uar_end = 0;
  uint64_t msix_start = 0;  // the MSI-X table = TPH ST table (vpci::TphCapability)
  uint64_t msix_entries = 0;
  uint64_t msix_end = 0;  // page-aligned end of the table's pages (== uar_end without TPH)
  uint64_t memic_start = 0;  // memic_bar_start_addr
  uint64_t memic_size = 0;
  uint64_t size = 0;  // the whole BAR0

  static constexpr BarLayout For(const DeviceConfig& c) {
    BarLayout l;
    l.uar_start = prm::UarPageOffset(c.first_uar_index);
    l.uar_end = l.uar_start + uint64_t{c.num_uars} * prm::kUarPageBytes;
    l.msix_start = l.uar_end;
    l.msix_entries = c.mkey_pcie_tph ? c.pcie_tph_steering_tags : 0;
    const uint64_t msix_bytes = l.msix_entries * vpci::kMsixEntryBytes;
    constexpr uint64_t kPage = prm::kUarPageBytes;
    l.msix_end = l.msix_start + (msix_bytes + kPage - 1) / kPage * kPage;
    l.memic_size = c.memic ? c.memic_bar_size : 0;
    const uint64_t align = l.memic_size ? std::bit_ceil(l.memic_size) : kPage;
    l.memic_start = (l.msix_end + align - 1) / align * align;
    l.size = l.memic_start + l.memic_size;
    return l;
  }
};

}  // namespace onchip::sim
