// Doorbell records: the 8-byte (QP, CQ) or 4-byte (SRQ) words in host memory that the driver
// writes and the device reads to learn how far a queue's producer or consumer got. Their bus
// address is the queue context's dbr_addr. Names and indices are the kernel's and rdma-core's
// (MLX5_RCV_DBR, MLX5_SND_DBR, MLX5_CQ_SET_CI, MLX5_CQ_ARM_DB).
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"

namespace onchip::prm {

// Word indices of a QP's record (db[MLX5_RCV_DBR], db[MLX5_SND_DBR]).
inline constexpr std::size_t MLX5_RCV_DBR = 0;
inline constexpr std::size_t MLX5_SND_DBR = 1;

// A QP's doorbell record. Each counter is the producer index after the last posted WQE, in
// WQEs (receive) or WQE basic blocks (send), 16 bits used.
struct QpDoorbellRecord {
  Be32 rcv_counter;  // db[MLX5_RCV_DBR]
  Be32 snd_counter;  // db[MLX5_SND_DBR]
};
static_assert(sizeof(QpDoorbellRecord) == 8);
static_assert(offsetof(QpDoorbellRecord, rcv_counter) == MLX5_RCV_DBR * 4);
static_assert(offsetof(QpDoorbellRecord, snd_counter) == MLX5_SND_DBR * 4);

// The counters' used width.
inline constexpr uint32_t kWqCounterMask = 0xffff;

// Word indices of a CQ's record.
inline constexpr std::size_t MLX5_CQ_SET_CI = 0;
inline constexpr std::size_t MLX5_CQ_ARM_DB = 1;

// CQ arm commands (the arm word's bits [27:24]).
enum CqArmCommand : uint32_t {
  MLX5_CQ_DB_REQ_NOT = 0,             // an event for the next completion
  MLX5_CQ_DB_REQ_NOT_SOL = 1u << 24,  // an event for the next solicited completion only
};

inline constexpr uint32_t kCqConsumerIndexMask = 0xffffff;
inline constexpr uint32_t kCqArmSnShift = 28;
inline constexpr uint32_t kCqArmSnMask = 0x3;

// The arm word: (sn & 3) << 28 | command | (ci & 0xffffff). It goes in the record's word 1 and,
// with the CQ number, in the UAR page's CQ doorbell (uapi/prm/uar_page.h).
constexpr uint32_t CqArmWord(uint32_t sn, CqArmCommand command, uint32_t ci) {
  return ((sn & kCqArmSnMask) << kCqArmSnShift) | command | (ci & kCqConsumerIndexMask);
}
constexpr uint32_t CqArmSn(uint32_t arm_word) { return (arm_word >> kCqArmSnShift) & kCqArmSnMask; }
constexpr CqArmCommand CqArmCmd(uint32_t arm_word) {
  return static_cast<CqArmCommand>(arm_word & MLX5_CQ_DB_REQ_NOT_SOL);
}
constexpr uint32_t CqArmCi(uint32_t arm_word) { return arm_word & kCqConsumerIndexMask; }

// A CQ's doorbell record.
struct CqDoorbellRecord {
  Be32 set_ci;  // consumer index & 0xffffff, written after every poll batch
  Be32 arm_db;  // the arm word of the last arm request
};
static_assert(sizeof(CqDoorbellRecord) == 8);
static_assert(offsetof(CqDoorbellRecord, set_ci) == MLX5_CQ_SET_CI * 4);
static_assert(offsetof(CqDoorbellRecord, arm_db) == MLX5_CQ_ARM_DB * 4);

// An SRQ's doorbell record: one word, the 16-bit running count of posted WQEs.
struct SrqDoorbellRecord {
  Be32 counter;
};
static_assert(sizeof(SrqDoorbellRecord) == 4);

}  // namespace onchip::prm
