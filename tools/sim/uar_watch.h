// The UAR doorbell registers the device thread watches while it is awake: how the engine learns,
// without a lock, that software rang something since the last pass looked.
//
// A ConnectX starts send work when software writes a UAR doorbell: a 64-bit store of the WQE's
// first 8 bytes, or a BlueFlame copy of the whole WQE, to a bfreg of the QP's UAR page (either
// half: uapi/prm/uar_page.h). CQ arm requests and EQ doorbells are UAR stores too. The watch
// is the flat list of those registers, so that "is there anything to do?" is a few dozen loads.
//
// Why the engine may read these words without a lock: UAR pages are BAR0, the device's own
// memfd mapping, which lives as long as the device and is never unmapped under the engine (DMA
// memory is another matter: the IOMMU's lock keeps a pass's accesses ahead of an unmap, which
// is why doorbell records are only read inside a pass). Software stores a register whole (an
// aligned 64-bit or 32-bit store; a BlueFlame copy writes the first 8 bytes as one aligned piece
// of its 64-byte line), so a relaxed atomic load returns the old value or the new one, never a
// mixture. The load promises no ordering and needs none: it only decides whether a full pass
// runs, and the pass reads the register again with acquire (a send doorbell) or takes it with an
// acquire exchange (CQ, EQ) before it reads the doorbell record that software wrote, with a
// store barrier, before ringing.
//
// A CQ or EQ doorbell register is rung when it holds anything but the consumed value
// (Engine::kConsumed64 / kConsumed32), which the pass stores when it takes one and which no
// software stores (engine.h). A send doorbell is rung when it differs from the value the last
// pass noted there: a pass only reads it, never writes it. (Taking it with an exchange at every
// post pulls the line the driver copies its BlueFlame WQEs into over to the device's core in the
// modified state, and the driver's next copy pulls it back: in one interleaved run of the 8-byte
// WRITE ping-pong that was the slowest way, p50 897-1,020 ns against 816-905 reading only.)
// Consecutive doorbells of one QP differ (they carry its WQE counter), and so do two QPs' (the
// QP number); the one way a word comes back bit for bit is a QP whose counter starts again at 0
// (moved to RST, or destroyed and created under the same number), and that takes a command: the
// engine builds the list again after every command and then consumes every send register once
// (ConsumeSend), so a doorbell after it differs from the consumed value it left.
//
// Threading: the engine builds the list inside a pass (Engine::RefreshQueues, after a command)
// and the device thread runs both the pass and the look, so the list itself needs no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace onchip::sim {

class UarWatch {
 public:
  // What a register holds once the engine has taken it.
  static constexpr uint64_t kConsumed64 = ~uint64_t{0};
  static constexpr uint32_t kConsumed32 = ~uint32_t{0};

  // Empties the lists (their capacity stays: rebuilding after a command allocates nothing once
  // the tables stop growing).
  void Clear() {
    send_.clear();
    words64_.clear();
    words32_.clear();
  }
  // A send doorbell register (the first 8 bytes of one half of a bfreg).
  void AddSend(uint64_t* word) { send_.push_back({word, kConsumed64}); }
  // A doorbell register the pass takes itself (a CQ's 64-bit, an EQ's 32-bit ones).
  void Add(uint64_t* word) { words64_.push_back(word); }
  void Add(uint32_t* word) { words32_.push_back(word); }

  // Whether any register was rung since a pass last saw it. No lock, no store, no allocation:
  // relaxed loads only.
  bool Rung() const {
    for (const Send& s : send_)
      if (std::atomic_ref<uint64_t>(*s.word).load(std::memory_order_relaxed) != s.seen) return true;
    for (uint64_t* w : words64_)
      if (std::atomic_ref<uint64_t>(*w).load(std::memory_order_relaxed) != kConsumed64) return true;
    for (uint32_t* w : words32_)
      if (std::atomic_ref<uint32_t>(*w).load(std::memory_order_relaxed) != kConsumed32) return true;
    return false;
  }

  // Notes what every send doorbell holds, before the pass reads the QPs' doorbell records: a
  // ring that lands after this differs from what was noted, so the next look runs another pass
  // even when this one already sees its WQE (one pass too many, never one too few). The load
  // acquires: the record the driver wrote before ringing is visible to the pass's reads.
  void NoteSend() {
    for (Send& s : send_) s.seen = std::atomic_ref<uint64_t>(*s.word).load(std::memory_order_acquire);
  }
  // After the list was built again (a command ran): every send register consumed, so that a
  // doorbell equal to the last one noted (a QP reset to WQE 0) still differs. The exchange
  // acquires, as NoteSend's load does; a ring after it is seen by the next look.
  void ConsumeSend() {
    for (Send& s : send_) {
      std::atomic_ref<uint64_t>(*s.word).exchange(kConsumed64, std::memory_order_acq_rel);
      s.seen = kConsumed64;
    }
  }

  std::size_t size() const { return send_.size() + words64_.size() + words32_.size(); }

 private:
  struct Send {
    uint64_t* word;
    uint64_t seen;  // what the last pass found there
  };
  std::vector<Send> send_;
  std::vector<uint64_t*> words64_;
  std::vector<uint32_t*> words32_;
};

}  // namespace onchip::sim
