// The software ConnectX's context memory: the tables of every object the firmware creates (UAR,
// PD, transport domain, XRC domain, MEMIC, SW ICM, mkey, EQ, CQ, QP, SRQ, SQ, RQ, TIS, TIR) with
// the index pools their numbers come from, the port's link state, the HCA state and the
// capabilities the data engine needs, and the generation every mutating command bumps.
//
// The Device owns it (tools/sim/device.h). Two agents work on it, as on a ConnectX: the firmware
// (tools/sim/firmware.h), the command processor, creates, changes and destroys contexts; the data
// engine (tools/sim/engine.h) runs the queues they describe and reaches them only through
// ContextsView (contexts_view.h): const reads, and named methods for what hardware writes back
// into a context (a QP moved to error, arm states, a remote invalidation, the port change taken).
// Both hold `mutex` while they touch anything here: a command, or one engine pass.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "tools/sim/bar_layout.h"
#include "tools/sim/caps.h"
#include "tools/sim/config.h"
#include "tools/sim/eth_queue_objects.h"
#include "tools/sim/index_pool.h"
#include "tools/sim/queue_objects.h"

namespace onchip::sim {

enum class HcaState : uint8_t {
  kDisabled,     // after reset or DISABLE_HCA: only ENABLE_HCA
  kEnabled,      // after ENABLE_HCA: ISSI, pages, capabilities, INIT_HCA
  kInitialized,  // after INIT_HCA: resources; TEARDOWN_HCA returns to kEnabled
};

// How many EQ numbers the device hands out (from 0): 2^log_max_eq, max_num_eqs and the 8-bit
// eq_number all bound it.
uint32_t EqCount(const DeviceConfig& config);

// QP numbers the device hands out: from kFirstQpn (0 and 1 name the special QPs, which this
// device does not create), 2^log_max_qp - kFirstQpn of them.
inline constexpr uint32_t kFirstQpn = 2;
uint32_t QpCount(const DeviceConfig& config);

struct Pd {
  uint16_t uid;
  uint32_t mkeys = 0;
  uint32_t queues = 0;  // live QPs and SRQs on it: DEALLOC_PD is RES_BUSY while non-zero
};

struct Xrcd {
  uint16_t uid;
  uint32_t users = 0;  // live XRC SRQs and XRC QPs naming it: DEALLOC_XRCD is RES_BUSY
};

struct MemicAlloc {
  uint64_t size;
  uint32_t mkeys = 0;
};

struct SwIcmObject {
  uint16_t uid;
  uint64_t start;
  uint8_t log_size;
  std::vector<std::byte> backing;
  uint32_t mkeys = 0;
};

struct Mkey {
  uint16_t uid;
  uint32_t pd;
  std::array<std::byte, 64> mkc;
  std::vector<std::byte> translations;  // translations_octword_actual_size * 16 bytes
  std::optional<uint64_t> memic_start;  // the MEMIC allocation it covers
  std::optional<uint32_t> sw_icm_id;    // the SW ICM object it covers
  std::vector<uint32_t> klm_targets;    // mkey indices its KLMs name (a bound window: its parent)
  bool window = false;                  // KLMS created free with umr_en: a memory window
  uint32_t klm_refs = 0;                // live KLM mkeys naming this one
};

struct Contexts {
  // The pools' ranges and the capabilities come from the device's configuration.
  Contexts(const DeviceConfig& config, const BarLayout& layout);
  Contexts(const Contexts&) = delete;
  Contexts& operator=(const Contexts&) = delete;

  // Held by every command (Firmware::Execute and the firmware's accessors) and by every engine
  // pass, once for the whole pass.
  mutable std::mutex mutex;

  HcaState state = HcaState::kDisabled;
  Capabilities caps;
  // The port's link: QUERY_VPORT_STATE reports it and the data engine moves no packet while it
  // is down. A change waits in port_change (the PORT_CHANGE sub_type) until the engine's next
  // pass takes it (ContextsView::TakePortChange) and raises the event.
  bool link_up = true;
  uint8_t port_change = 0;

  IndexPool uar_ids;
  std::map<uint32_t, uint16_t> uars;  // index -> uid
  IndexPool pd_ids;
  std::map<uint32_t, Pd> pds;
  IndexPool td_ids;
  std::map<uint32_t, uint16_t> tds;  // index -> uid
  IndexPool xrcd_ids;
  std::map<uint32_t, Xrcd> xrcds;
  std::map<uint64_t, MemicAlloc> memic;  // by BAR offset
  IndexPool object_ids;
  std::map<uint32_t, SwIcmObject> sw_icm;  // by obj_id
  IndexPool mkey_ids;
  std::map<uint32_t, Mkey> mkeys;  // by mkey index (mkey >> 8)
  IndexPool eq_ids;
  std::map<uint32_t, Eq> eqs;  // by eq_number
  IndexPool cq_ids;
  std::map<uint32_t, Cq> cqs;  // by cqn
  IndexPool qp_ids;
  std::map<uint32_t, Qp> qps;  // by qpn
  IndexPool srq_ids;
  std::map<uint32_t, Srq> srqs;  // by srqn
  std::map<uint32_t, Sq> sqs;    // by sqn (from qp_ids)
  std::map<uint32_t, Rq> rqs;    // by rqn (from qp_ids)
  IndexPool tis_ids;
  std::map<uint32_t, Tis> tises;  // by tisn
  IndexPool tir_ids;
  std::map<uint32_t, Tir> tirs;  // by tirn

  // Bumped by every command that succeeded and is not a query: the contexts above may have
  // changed, and the engine rebuilds what it derived from them (Engine::RefreshQueues). The
  // engine's only sign of a change (the firmware's Counters are statistics).
  uint64_t generation = 0;
};

}  // namespace onchip::sim
