// The responder: one request packet through the stages of an IBTA responder, in their order,
// against a QP of this device:
//
//   Accepts           the QP exists, has the packet's transport and is in RTR, RTS, SQD or SQER;
//                     the first request in RTR reports COMM_EST (EstablishCommunication)
//   CheckSequence     RC: the expected PSN is executed, an earlier one (a resend whose answer
//                     was late) answered again, a later one dropped
//   ValidateTarget    UD's Q_Key; XRC: a target QP and an XRC SRQ of its domain, whose PD, CQ
//                     and user index the request then uses
//   Execute*          SEND / WRITE / READ / ATOMIC: rights (qpc.rwe/rre/rae), rkeys, receive
//                     WQEs and their lkeys, the memory access
//   Respond*          ACK, NAK (RNR, remote access, invalid request, remote operation), read and
//                     atomic responses; a repeated request's answer again (RespondRepeated)
//   Complete          the responder CQE of a receive WQE taken; Refuse's error CQE, QP to
//                     error and affiliated event
//
// What each opcode needs and which syndrome a failure gets: responder.cc. A Responder lives for one request (Engine::HandleRequest builds it) and holds
// what the request is checked against and completes on: the QP's own PD and receive CQ, or an
// XRC target's SRQ's. It runs inside the pass, under the contexts' mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tools/sim/engine.h"
#include "tools/sim/engine_transport.h"
#include "tools/sim/queue_objects.h"
#include "tools/sim/wire.h"
#include "uapi/prm/cqe.h"

namespace onchip::sim {

class Engine::Responder {
 public:
  Responder(Engine& engine, Packet& p, uint32_t qpn, const Qp& qp);
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  // Every stage in order; a stage that drops, refuses or answers the request ends it.
  void Handle();

 private:
  using Bytes = std::span<const std::byte>;
  struct ScatterEntry {
    uint32_t lkey;
    uint64_t addr;
    uint32_t length;
  };
  // A receive WQE taken for one message.
  struct Receive {
    std::vector<ScatterEntry> list;
    uint16_t wqe_counter = 0;
    uint32_t pd = 0;
  };
  enum class Sequence : uint8_t { kExpected, kRepeated, kDrop };

  // ---- sequence and target ----
  bool Accepts() const;
  void EstablishCommunication();
  Sequence CheckSequence() const;
  // False when the request is dropped or refused here.
  bool ValidateTarget();

  // ---- execute ----
  void Execute();
  void ExecuteSend();
  void ExecuteWrite();
  void ExecuteRead();
  void ExecuteAtomic();
  // The next receive WQE: from the SRQ's free list or the QP's receive ring; nothing when none
  // is posted.
  std::optional<Receive> TakeReceive();
  std::optional<Receive> TakeSrqReceive(uint32_t srqn);
  std::optional<Receive> TakeRingReceive();
  static void ParseScatter(Bytes wqe, std::size_t offset, std::vector<ScatterEntry>* out);
  // Scatters `parts` over the receive WQE, the first `skip` bytes of its room passed over
  // unwritten: 0, LOCAL_LENGTH_ERR or LOCAL_PROT_ERR.
  prm::CqeSyndrome Scatter(const Receive& recv, std::span<const Bytes> parts,
                           std::size_t skip) const;

  // ---- respond ----
  // A response to the request, addressed back the way it came.
  Packet Answer(PacketKind kind) const;
  void Ack();
  void Nak(NakCode code);  // RC only: UC and UD never answer
  void RespondRepeated();
  // A refused request: the receive WQE (if one was taken) completes in error, an RC responder
  // NAKs, enters the error state and reports why (IBTA's affiliated asynchronous errors).
  void Refuse(NakCode code, const Receive* recv, prm::CqeSyndrome syndrome);

  // ---- complete ----
  void Executed();  // the request ran: the next PSN is expected
  void Complete(const Receive& recv, prm::CqeOpcode opcode, uint32_t byte_cnt);

  Engine& e_;
  Packet& p_;
  const uint32_t qpn_;
  const Qp& qp_;
  QpProgress& pr_;
  const Bytes qpc_;
  const bool rc_;
  const bool ud_;
  // What the request is checked against and completes on: the QP's own, or (XRC) its SRQ's.
  uint32_t user_index_;
  uint32_t pd_;
  uint32_t rcv_cqn_;
  const Cq* rcv_cq_;  // null until an XRC target's SRQ names its CQ
  std::optional<uint32_t> srqn_;
};

}  // namespace onchip::sim
