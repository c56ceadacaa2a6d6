// The wire between software ConnectX devices in one process: packets, the port each device
// receives them on, and the fabric that finds a port by GID (and, on InfiniBand, by LID).
//
// A requester's data engine turns a send WQE into a request packet and hands it to the port of
// the device that owns the destination GID (a packet to its own GID never leaves the engine).
// The responder's engine executes the request under its own contexts' mutex and answers with a
// packet the same way. A port's queue takes the fabric's mutex and the port's, never a firmware
// mutex.
//
// Devices on one device thread (a daemon's functions) share one engine loop, as the functions of
// one ConnectX share its NIC-internal switch: a packet handed over on the thread that serves the
// destination port, between that port's passes, is taken at once (Receiver::ReceiveNow), inside
// the sender's pass, instead of waiting in the queue for a pass of its own. The receiver only
// ever tries its locks (its contexts' mutex, its IOMMU's shared lock) and queues the packet when
// it cannot have them at once, so the two contexts' mutexes a thread then holds never make it
// wait for a thread that waits for it.
//
// Messages are whole: one packet per message, no MTU segmentation (the responder checks the UD
// MTU), no loss except to a GID or LID no device owns, no reordering between two QPs.
//
// InfiniBand: a packet without a GRH (the address path's grh 0, or a UD AV without the GRH bit)
// is routed by its DLID, as a subnet's switches forward by LID; one with a GRH still goes by its
// DGID. RoCE packets always carry a GRH (Ethernet has no LIDs).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <type_traits>
#include <vector>

#include "tools/sim/config.h"
#include "tools/sim/gid_table.h"

namespace onchip::sim {


enum class PacketKind : uint8_t {
  kRequest,         // SEND*, RDMA_WRITE*, RDMA_READ, ATOMIC_*: `opcode` says which
  kAck,             // a SEND or WRITE executed
  kNak,             // refused: `nak` says why
  kReadResponse,    // `payload` is the data read
  kAtomicResponse,  // `atomic_original` is the value before the operation
};

enum class NakCode : uint8_t {
  kRnr,              // no receive WQE: retry after `rnr_timer` (qpc.min_rnr_nak code)
  kRemoteAccess,     // rkey, rights or bounds refused
  kInvalidRequest,   // the request cannot be executed (length, alignment, opcode, QP rights)
  kRemoteOperation,  // the responder failed locally (its receive WQE was bad)
};

// The header a packet carries above the link (the PRM's L3_Header_Type, which a UD receive's
// CQE reports): an IBTA GRH (InfiniBand, RoCE v1), or RoCE v2's IPv6 or IPv4 header over UDP.
// The sender's source GID entry decides it: its type (v1 or v2) and, for v2, its address.
enum class L3Header : uint8_t { kGrh = 0, kIpv6 = 1, kIpv4 = 2 };

// What a packet carries besides its payload: the headers' fields, kept trivially copyable so
// that handing a packet on (a move into a port's queue or the loopback list, one per message
// and one per response) copies them as one block.
struct PacketHeaders {
  PacketKind kind = PacketKind::kRequest;
  uint8_t transport = 0;  // qpc.st of the sending QP
  bool grh = true;  // false: an InfiniBand packet without a GRH, routed by `dlid`
  L3Header l3 = L3Header::kGrh;  // with grh: which header it is
  Gid sgid{};
  Gid dgid{};
  uint16_t slid = 0;  // InfiniBand: the sender's and the receiver's LIDs
  uint16_t dlid = 0;
  uint8_t sl = 0;     // InfiniBand: the service level (LRH)
  uint32_t src_qpn = 0;
  uint32_t dst_qpn = 0;
  uint32_t psn = 0;  // the message's sequence number (24 bits); a response echoes it
  // Request fields.
  uint8_t opcode = 0;  // prm::SendOpcode
  bool solicited = false;
  uint32_t imm = 0;  // the ctrl segment's imm word as it lay in the WQE (big-endian bytes)
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  uint32_t read_length = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  uint32_t qkey = 0;  // UD
  uint32_t xrc_srqn = 0;  // XRC: the XRC SRQ at the target (the WQE's XRC segment)
  uint8_t tclass = 0;
  uint8_t hop_limit = 0;
  uint32_t flow_label = 0;
  // Response fields.
  NakCode nak = NakCode::kRnr;
  uint8_t rnr_timer = 0;
  uint64_t atomic_original = 0;
  bool atomic_big_endian = false;  // the requester stores atomic_original big-endian
};
static_assert(std::is_trivially_copyable_v<PacketHeaders>);

struct Packet : PacketHeaders {
  std::vector<std::byte> payload;
};

// What owns a port, as the fabric sees it when a packet can be taken at once.
class Receiver {
 public:
  // Takes `p` now (handles it, or hands it to the owner's pass running up this thread's stack)
  // and returns true; or returns false with `p` untouched, to be queued (a lock the owner needs
  // is held, packets already wait, or only a pass of the owner's may take it).
  virtual bool ReceiveNow(Packet& p) = 0;

 protected:
  ~Receiver() = default;
};

// A device's receive side: packets wait here until its engine's next pass. Any thread may Push.
class Port {
 public:
  // `wake` is called after a Push while the owner says it sleeps (SetSleeping). `owner` takes
  // packets at once on the thread that serves the port (SetServer).
  Port(std::function<void()> wake, Receiver& owner) : wake_(std::move(wake)), owner_(owner) {}
  void Push(Packet&& p);
  // The device thread that runs the owner's passes, set and cleared under that thread's own
  // lock, which it holds while it serves; nullptr: none.
  void SetServer(const void* server);
  // Marks the calling thread, for its scope, as the one running `server`'s passes (it holds the
  // server's lock throughout, so no port of that server attaches to it or leaves it meanwhile).
  class Serving {
   public:
    explicit Serving(const void* server);
    ~Serving();
    Serving(const Serving&) = delete;
    Serving& operator=(const Serving&) = delete;

   private:
    const void* outer_;
  };
  // Everything queued so far, in arrival order, into `out` (cleared first). The two buffers
  // trade places, so once both have grown a hand-over allocates nothing.
  void Take(std::vector<Packet>& out);
  bool Pending() const { return pending_.load(std::memory_order_seq_cst) != 0; }
  void SetSleeping(bool sleeping) { sleeping_.store(sleeping, std::memory_order_seq_cst); }

 private:
  friend class Fabric;
  // Whether the calling thread runs this port's passes (a Serving of its server is alive).
  bool ServedHere() const;
  // To the owner at once if it can take the packet, else into the queue. Only where ServedHere.
  void Receive(Packet&& p);

  std::function<void()> wake_;
  Receiver& owner_;
  std::atomic<const void*> server_{nullptr};
  std::mutex mutex_;
  std::vector<Packet> queue_;
  std::atomic<std::size_t> pending_{0};
  std::atomic<bool> sleeping_{false};
};

// The process's fabric: which port owns which GID, and which InfiniBand port which LID. For
// InfiniBand it plays the subnet manager too: it sits at kSmLid (as a switch-embedded SM does)
// and hands every IB port a unicast LID of its own.
class Fabric {
 public:
  static Fabric& Instance();
  static constexpr uint16_t kSmLid = 1;
  static constexpr uint16_t kMaxUnicastLid = 0xbfff;
  // Reserves a LID for a port about to attach: `lid` itself, or with 0 the lowest free unicast
  // LID above kSmLid. 0 when `lid` is taken, is not unicast, or none is free.
  uint16_t ReserveLid(uint16_t lid);
  // A GID another attached port already owns stays that port's (the first device keeps it); an
  // empty (all-zero) GID names no port. `lid`, when not 0, was reserved for this port.
  void Attach(Port* port, std::span<const Gid> gids, uint16_t lid = 0);
  // After this returns no packet reaches the port, and its LID is free again.
  void Detach(Port* port);
  // Hands the packet to the port owning `dgid`; false if none does (the packet is lost).
  bool Deliver(const Gid& dgid, Packet&& p);
  // ... to the port at `dlid`; false if none is there (the packet is lost).
  bool DeliverToLid(uint16_t dlid, Packet&& p);

 private:
  friend class Port;
  // A port attached, left, or changed server: every thread's ServedRoutes is stale.
  void Changed() { generation_.fetch_add(1, std::memory_order_acq_rel); }
  // The port owning `dgid` (or at `dlid`) among those the calling thread serves, from that
  // thread's own copy of their routes (wire.cc): no mutex, no map. nullptr when the thread
  // serves none of that address (the caller then takes the mutex and the map).
  Port* ServedPort(const Gid& dgid);
  Port* ServedPortAtLid(uint16_t dlid);
  // Whether the calling thread has a copy to use (it runs a pass), brought up to date first.
  bool ServedRoutesCurrent();
  // Brings the calling thread's copy up to generation_, under mutex_.
  void RefreshServedRoutes();

  // GIDs ordered as their two words (gid_table.h).
  struct GidOrder {
    bool operator()(const Gid& a, const Gid& b) const { return GidWords(a) < GidWords(b); }
  };
  std::mutex mutex_;
  // Bumped by Attach, Detach and Port::SetServer; read before a thread trusts its routes.
  std::atomic<uint64_t> generation_{0};
  std::map<Gid, Port*, GidOrder> ports_;
  std::map<uint16_t, Port*> lids_;  // a reserved LID maps to nullptr until its port attaches
};

}  // namespace onchip::sim
