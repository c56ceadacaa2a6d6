// The software ConnectX's firmware: the command set, its state machine and its resource tables.
//
// This is the transport-free core. It executes one command at a time on byte buffers (the input
// message and an output buffer of the driver's output_length) and knows nothing of cmdq entries,
// doorbells or threads, so the in-process device (tools/sim/device.h) and a later shared daemon
// drive the same object. It reaches host memory only through the Iommu and device memory only
// through the MEMIC window it is given (BAR0's bytes).
//
// Every command is validated as firmware does, in this order: opcode (BAD_OP_ERR), HCA state
// (BAD_SYS_STATE_ERR), input and output lengths (BAD_INP_LEN_ERR / BAD_OUTP_LEN_ERR), reserved
// bits (BAD_PARAM_ERR), op_mod, then the command's own rules (ownership, PD, limits, ranges). A
// refused command changes nothing and its output is all zero but status and syndrome; the
// syndrome names the check (uapi/sim/syndrome.h).
//
// Ownership: objects record the uid of the command that created them; destroying or using one
// with another uid is NOT_OWNER (BAD_RES_ERR). uids are taken as opaque owner tags (this device
// has no UCTX objects yet, log_max_uctx = 0).
//
// Thread safety: Execute and every accessor lock one mutex; any thread may call them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tools/sim/bar_layout.h"
#include "tools/sim/caps.h"
#include "tools/sim/config.h"
#include "tools/sim/contexts.h"
#include "tools/sim/engine_state_control.h"
#include "tools/sim/eth_queue_objects.h"
#include "tools/sim/gid_table.h"
#include "tools/sim/index_pool.h"
#include "tools/sim/iommu.h"
#include "tools/sim/outcome.h"
#include "tools/sim/queue_objects.h"
#include "tools/sim/steering_tags.h"
#include "tools/sim/umr.h"

namespace onchip::sim {

struct SrqRing;  // srq_queue_checks.h

// What a test reads to prove a command ran or nothing leaked.
struct Counters {
  uint64_t commands = 0;         // commands that reached the firmware
  uint64_t commands_failed = 0;  // of which answered with a non-OK status
  std::map<uint16_t, uint64_t> by_opcode;
  uint32_t uars = 0;
  uint32_t pds = 0;
  uint32_t transport_domains = 0;
  uint32_t xrcds = 0;
  uint32_t mkeys = 0;
  uint32_t memic_allocations = 0;
  uint32_t sw_icm_objects = 0;
  uint32_t eqs = 0;
  uint32_t cqs = 0;
  uint32_t qps = 0;
  uint32_t srqs = 0;
  uint32_t sqs = 0;
  uint32_t rqs = 0;
  uint32_t tises = 0;
  uint32_t tirs = 0;
  uint32_t pages_held = 0;
};

// A test's instruction to refuse commands: the next `count` commands (of `opcode`, if given)
// answer `status` + `syndrome` without running.
struct InjectedFailure {
  uint32_t count = 1;
  std::optional<uint16_t> opcode;
  prm::CommandStatus status = prm::CommandStatus::INT_ERR;
  uint32_t syndrome = 0;
};

// The QP state-transition commands, which share one handler (firmware_qp_transitions.cc).
enum class QpTransition : uint8_t {
  kRst2Init,
  kInit2Init,
  kInit2Rtr,
  kRtr2Rts,
  kRts2Rts,
  kSqErr2Rts,
  kSqd2Rts,
  k2Err,
  k2Rst,
};

class Firmware {
 public:
  // The firmware of a device whose context memory is `contexts`, and whose data engine keeps its
  // state in what `engine` reaches (the Device owns both).
  Firmware(Contexts& contexts, EngineStateControl engine, const DeviceConfig& config,
           const BarLayout& layout, std::span<std::byte> memic_window,
           SteeringTagTable steering_tags, Iommu& iommu);

  // Runs one command. `in` is the whole input message; `out` is the driver's output buffer
  // (output_length bytes), fully written: status and syndrome, the command's fields, zeros.
  Outcome Execute(std::span<const std::byte> in, std::span<std::byte> out);
  // Whether Execute has a handler for `opcode` (uapi/prm/commands.h's in_sim, tested).
  static bool Implements(uint16_t opcode);

  Counters counters() const;
  HcaState state() const;
  // Takes the port's link down or up (a cable pulled, a switch port disabled): QUERY_VPORT_STATE
  // follows at once, and the data engine raises PORT_CHANGE on its next pass.
  void SetLinkUp(bool up);
  bool link_up() const;
  // What SET_DRIVER_VERSION and ACCESS_REG(HOST_ENDIANNESS) last recorded.
  std::string driver_version() const;
  uint32_t host_endianness() const;
  void InjectFailure(const InjectedFailure& f);
  void ClearInjectedFailures();

  // Consistency of the tables (reference counts, index pools, ranges); the fuzz target checks it
  // after every input. Returns the first broken invariant, or nullptr (firmware_invariants.cc).
  const char* CheckInvariants() const;

  // Device-memory access for the data engine: the bytes behind an ICM address range, if one live
  // SW ICM object covers it.
  std::optional<std::span<std::byte>> SwIcmBytes(uint64_t icm_addr, uint64_t len);
  // The device memory an mkey reaches: `len` bytes at `offset` into a MEMIC or SW_ICM mkey
  // (mkey = index << 8 | variant; the variant must match), bounds-checked against the mkey.
  // MEMIC bytes are BAR0's window, so they are what the CPU stored through the BAR.
  // A bound memory window reaches its parent's memory: offset 0 is the window's start_addr.
  std::optional<std::span<std::byte>> MkeyDeviceMemory(uint32_t mkey, uint64_t offset,
                                                       uint64_t len);

  // Host memory behind an MTT mkey (a registered host MR) or a window bound on one, as the data
  // engine reaches it: [va, va + bytes) must lie inside the key's range (start_addr, len); each
  // page of it is translated through the (parent) key's MTT, whose entries cover
  // 2^mkc.log_page_size bytes each, and then through the IOMMU. MkeyBusAddress gives the bus address (IOVA) of one byte. nullopt /
  // false when the key is unknown, free, not MTT, its key byte differs, or a byte is outside the
  // key or unmapped.
  std::optional<uint64_t> MkeyBusAddress(uint32_t mkey, uint64_t va) const;
  bool WriteMkeyHost(uint32_t mkey, uint64_t va, std::span<const std::byte> data);
  bool ReadMkeyHost(uint32_t mkey, uint64_t va, std::span<std::byte> out) const;

  // What the device puts into the TLPs that reach an mkey's memory: the processing hint
  // (mkc.pcie_tph_ph) and the steering tag the ST table entry mkc.pcie_tph_steering_tag_index
  // holds at this moment (nullopt for index 0, "no steering tag"). nullopt when the mkey is
  // unknown, its key byte differs, or pcie_tph_en = 0.
  struct TphHint {
    uint8_t ph = 0;
    std::optional<uint16_t> steering_tag;
  };
  std::optional<TphHint> MkeyTph(uint32_t mkey) const;

  // Executes one UMR WQE that binds a memory window or invalidates it (firmware_umr.cc): the
  // send-queue engine's call. On failure nothing changed and the result names the error CQE
  // syndrome and the check.
  UmrResult PostUmr(const UmrRequest& request);

  // ---- the data engine's calls, made while it holds contexts.mutex (one engine pass) ----
  // PostUmr's work (firmware_umr.cc).
  UmrResult PostUmrLocked(const UmrRequest& request);
  // The bus address of va through mkey `m` (number `mkey`), already found: [va, va + len) must
  // lie inside the key; a window goes through its parent.
  std::optional<uint64_t> MttTranslateLocked(const Mkey& m, uint32_t mkey, uint64_t va,
                                             uint64_t len, uint64_t* page_bytes) const;
  // MttTranslateLocked's last step alone, for an MTT key (not a window) whose checks passed: the
  // entry for va, given the key's start_addr and log_page_size.
  static std::optional<uint64_t> MttLookup(const Mkey& m, uint64_t start, uint32_t log_page_size,
                                           uint64_t va, uint64_t* page_bytes);
  // The device memory of mkey `m` (number `mkey`), already found (MkeyDeviceMemory's work).
  std::optional<std::span<std::byte>> DeviceMemoryLocked(const Mkey& m, uint32_t mkey,
                                                         uint64_t offset, uint64_t len,
                                                         bool through_window);
  // DeviceMemoryLocked's last step alone, for a MEMIC or SW ICM key (not a window) whose checks
  // passed (key byte, free, [offset, offset + len) inside mkc.len): the bytes, given the key's
  // mkc.start_addr. The engine checks a key once per use (Engine::Admit) and comes here.
  std::optional<std::span<std::byte>> DeviceMemoryAt(const Mkey& m, uint64_t start,
                                                     uint64_t offset, uint64_t len);


 private:
  UmrResult PostMrUmrLocked(const UmrRequest& request);  // request.reg_umr
  // The bus address of va in an MTT key, checking [va, va + len) lies inside the key (lock held).
  std::optional<uint64_t> MttTranslateLocked(uint32_t mkey, uint64_t va, uint64_t len,
                                             uint64_t* page_bytes) const;
  // Calls f(bus_address, offset, bytes) for each page-sized piece of [va, va + len) (lock held).
  template <typename F>
  bool ForEachMttPiece(uint32_t mkey, uint64_t va, uint64_t len, F f) const;

  using Handler = Outcome (Firmware::*)(std::span<const std::byte>, std::span<std::byte>);
  static Handler HandlerFor(uint16_t opcode);  // nullptr: not implemented
  Outcome Dispatch(uint16_t opcode, std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CheckState(uint16_t opcode) const;

  // HCA life cycle (firmware_hca.cc).
  Outcome EnableHca(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DisableHca(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryIssi(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome SetIssi(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryPages(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ManagePages(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryHcaCap(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome SetHcaCap(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome AccessReg(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome InitHca(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome TeardownHca(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome SetDriverVersion(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Nop(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryVportState(std::span<const std::byte> in, std::span<std::byte> out);
  // InfiniBand ports only: the port as the subnet manager configured it, and its GID table.
  Outcome QueryHcaVportContext(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryHcaVportGid(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryRoceAddress(std::span<const std::byte> in, std::span<std::byte> out);
  int64_t PagesWanted() const;
  void ReleaseAllObjects();

  // UAR, PD, transport domain (firmware_resources.cc).
  Outcome AllocUar(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DeallocUar(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome AllocPd(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DeallocPd(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome AllocTd(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DeallocTd(std::span<const std::byte> in, std::span<std::byte> out);
  // XRC domains (firmware_resources.cc).
  Outcome AllocXrcd(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DeallocXrcd(std::span<const std::byte> in, std::span<std::byte> out);

  // MEMIC (firmware_memic.cc).
  Outcome AllocMemic(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DeallocMemic(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ModifyMemic(std::span<const std::byte> in, std::span<std::byte> out);

  // General objects: SW ICM (firmware_sw_icm.cc).
  Outcome CreateGeneralObject(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyGeneralObject(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryGeneralObject(std::span<const std::byte> in, std::span<std::byte> out);
  // The SW ICM area [start, start + 2^log_size) holding `addr`, if any.
  std::optional<std::pair<uint64_t, uint8_t>> SwIcmArea(uint64_t addr) const;

  // Mkeys (firmware_mkey.cc).
  Outcome CreateMkey(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CheckMkeyTarget(std::span<const std::byte> in, std::span<const std::byte> list,
                          uint32_t mode, Mkey* m) const;
  Outcome DestroyMkey(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryMkey(std::span<const std::byte> in, std::span<std::byte> out);
  void ForgetMkey(uint32_t index);

  // Queue buffers (firmware_queue.cc): the pas[] list that follows a queue command's fixed
  // layout (from byte `pas_offset`), checked against the pages a queue of 2^log_queue_bytes
  // needs at 2^log_page_bytes per page: count, alignment, IOMMU mapping.
  // The largest queue page the contexts' log_page_size may name (page = 4 KiB << it): 2^39
  // bytes, as for mkeys.
  static constexpr uint32_t kMaxQueueLogPageSize = 39 - 12;
  struct PasSyndromes {
    Syndrome count, entry, unmapped;
  };
  Outcome ReadQueuePages(std::span<const std::byte> in, std::size_t pas_offset,
                         uint32_t log_queue_bytes, uint32_t log_page_bytes,
                         const PasSyndromes& syndromes, std::vector<uint64_t>* pas) const;
  // The same for a buffer of any size (a QP's receive ring followed by its send ring):
  // ceil(bytes / page) pages, at least one, the last one mapped as far as the buffer reaches.
  Outcome ReadBufferPages(std::span<const std::byte> in, std::size_t pas_offset,
                          uint64_t buffer_bytes, uint32_t log_page_bytes,
                          const PasSyndromes& syndromes, std::vector<uint64_t>* pas) const;
  // Writes as many entries of `pas` as fit into `out` from byte `pas_offset`.
  static void WriteQueuePages(std::span<std::byte> out, std::size_t pas_offset,
                              const std::vector<uint64_t>& pas);

  // Event queues (firmware_eq.cc).
  Outcome CreateEq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyEq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryEq(std::span<const std::byte> in, std::span<std::byte> out);

  // Completion queues (firmware_cq.cc).
  Outcome CreateCq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyCq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryCq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ModifyCq(std::span<const std::byte> in, std::span<std::byte> out);
  // MODIFY_CQ op_mod 1 on CQ `cqn` (firmware_cq.cc), its checks after ModifyCq's common ones.
  Outcome ResizeCq(std::span<const std::byte> in, uint32_t cqn, Cq& cq, uint32_t select);

  // Queue pairs (firmware_qp.cc) and their state transitions (firmware_qp_transitions.cc).
  Outcome CreateQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CheckNewQpContext(std::span<const std::byte> in, uint16_t uid) const;
  Outcome CreateXrcTargetQp(std::span<const std::byte> in, std::span<std::byte> out, uint16_t uid,
                            Xrcd& xrcd, uint32_t xrcdn);
  Outcome DestroyQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Rst2InitQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Init2InitQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Init2RtrQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Rtr2RtsQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Rts2RtsQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome SqErr2RtsQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Sqd2RtsQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Qp2ErrQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome Qp2RstQp(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ModifyQp(QpTransition t, std::span<const std::byte> in, std::span<std::byte> out);
  // Drops a QP and the references it holds (CQs, SRQ, PD).
  void ForgetQp(std::map<uint32_t, Qp>::iterator it);

  // Shared receive queues (firmware_srq.cc).
  Outcome CreateSrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroySrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QuerySrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ArmRq(std::span<const std::byte> in, std::span<std::byte> out);
  // XRC SRQs (firmware_xrc_srq.cc): in the SRQ table, with an XRC domain and a CQ.
  Outcome CreateXrcSrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyXrcSrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryXrcSrq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ArmXrcSrq(std::span<const std::byte> in, std::span<std::byte> out);
  // What CREATE_SRQ and CREATE_XRC_SRQ read from their context layouts (srqc, xrc_srqc) for the
  // steps they share.
  struct SrqContext {
    uint16_t uid;                      // the creator's
    uint32_t pdn;
    uint64_t dbr_addr;
    std::size_t pas_offset;            // the command's pas[], in bytes
    std::span<const std::byte> srqc;   // the context as the command carries it
  };
  // The steps both kinds share (firmware_srq_create.cc), after each checked its own fields and
  // its ring (srq_queue_checks.h), in firmware's order: the PD (known, the creator's), then
  // `check_named` (the other objects the kind names, recorded in the SRQ it is given), the
  // doorbell record (4-byte aligned, mapped), the ring's pages, a number. On success the SRQ is in
  // srqs_ under `*srqn` with its context copied, and holds its PD.
  Outcome CreateSrqFromContext(std::span<const std::byte> in, const SrqContext& context,
                               const SrqRing& ring, const std::function<Outcome(Srq&)>& check_named,
                               uint32_t* srqn);

  // Raw packet QP objects (firmware_eth_queues.cc): SQ, RQ, TIS, TIR.
  Outcome CreateTis(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyTis(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryTis(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CreateSq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroySq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QuerySq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ModifySq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CreateRq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyRq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryRq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome ModifyRq(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome CreateTir(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome DestroyTir(std::span<const std::byte> in, std::span<std::byte> out);
  Outcome QueryTir(std::span<const std::byte> in, std::span<std::byte> out);
  // The checks an SQ's and an RQ's wq share; fills everything of `q` but the uid and state.
  Outcome ReadWorkQueue(std::span<const std::byte> in, std::size_t wq_bit_offset, uint16_t uid,
                        bool send, WorkQueue* q) const;
  // Live TISes and TIRs naming each transport domain: DEALLOC_TRANSPORT_DOMAIN is RES_BUSY.
  uint32_t TdUsers(uint32_t td) const;

  std::optional<std::span<std::byte>> DeviceMemoryLocked(uint32_t mkey, uint64_t offset,
                                                         uint64_t len, bool through_window);

  const DeviceConfig config_;
  const BarLayout layout_;
  std::span<std::byte> memic_window_;
  SteeringTagTable steering_tags_;
  Iommu& iommu_;

  // The command processor's own state.
  uint16_t current_issi_ = 0;
  uint32_t host_endianness_he_ = 0;
  std::string driver_version_;
  std::array<uint32_t, 4> sw_owner_id_{};
  std::set<uint64_t> pages_;  // IOVAs of the 4 KiB pages the driver gave
  Counters counters_;  // statistics only: nothing reads them as a sign of change

  // The context memory it works on (contexts.h), its parts under their own names.
  const Contexts& contexts_;
  std::mutex& mutex_;
  HcaState& state_;
  Capabilities& caps_;
  bool& link_up_;
  uint8_t& port_change_;
  IndexPool& uar_ids_;
  std::map<uint32_t, uint16_t>& uars_;  // index -> uid
  IndexPool& pd_ids_;
  std::map<uint32_t, Pd>& pds_;  // by pd number
  IndexPool& td_ids_;
  std::map<uint32_t, uint16_t>& tds_;  // index -> uid
  IndexPool& xrcd_ids_;
  std::map<uint32_t, Xrcd>& xrcds_;  // by xrcd number
  std::map<uint64_t, MemicAlloc>& memic_;  // by BAR offset
  IndexPool& object_ids_;
  std::map<uint32_t, SwIcmObject>& sw_icm_;  // by obj_id
  IndexPool& mkey_ids_;
  std::map<uint32_t, Mkey>& mkeys_;  // by mkey index (mkey >> 8)
  IndexPool& eq_ids_;
  std::map<uint32_t, Eq>& eqs_;  // by eq_number
  IndexPool& cq_ids_;
  std::map<uint32_t, Cq>& cqs_;  // by cqn
  IndexPool& qp_ids_;
  std::map<uint32_t, Qp>& qps_;  // by qpn
  IndexPool& srq_ids_;
  std::map<uint32_t, Srq>& srqs_;  // by srqn
  std::map<uint32_t, Sq>& sqs_;  // by sqn (from qp_ids_)
  std::map<uint32_t, Rq>& rqs_;  // by rqn (from qp_ids_)
  IndexPool& tis_ids_;
  std::map<uint32_t, Tis>& tises_;  // by tisn
  IndexPool& tir_ids_;
  std::map<uint32_t, Tir>& tirs_;  // by tirn
  uint64_t& generation_;
  // The data engine's state (engine_state_control.h): started afresh with each queue, read by the
  // queries.
  EngineStateControl engine_;
  std::vector<InjectedFailure> injected_;
};

}  // namespace onchip::sim
