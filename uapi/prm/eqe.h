// The 64-byte event queue entry (struct mlx5_eqe) as a plain struct, with the event types and
// the data layouts the software ConnectX writes.
//
// The device writes every byte but `owner` first and `owner` last. `owner` is the producer's
// pass over the ring: the EQE at consumer index ci belongs to software iff
// (owner ^ (ci >> log_eq_size)) & 1 == 0; software initialises every owner to 1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"

namespace onchip::prm {

// mlx5_eqe.type (the kernel's enum mlx5_event).
enum EventType : uint8_t {
  MLX5_EVENT_TYPE_COMP = 0x00,
  MLX5_EVENT_TYPE_COMM_EST = 0x02,
  MLX5_EVENT_TYPE_CQ_ERROR = 0x04,
  MLX5_EVENT_TYPE_WQ_CATAS_ERROR = 0x05,
  MLX5_EVENT_TYPE_PORT_CHANGE = 0x09,
  MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR = 0x10,
  MLX5_EVENT_TYPE_WQ_ACCESS_ERROR = 0x11,
  MLX5_EVENT_TYPE_SRQ_LAST_WQE = 0x13,
  MLX5_EVENT_TYPE_SRQ_RQ_LIMIT = 0x14,
};

// mlx5_eqe.sub_type of a PORT_CHANGE event.
enum PortChangeSubtype : uint8_t {
  MLX5_PORT_CHANGE_SUBTYPE_DOWN = 1,
  MLX5_PORT_CHANGE_SUBTYPE_ACTIVE = 4,
};
// Port change event: the port number in bits 7:4 of data byte 8 (EQE byte 40).
inline constexpr std::size_t kEqePortByte = 8;

// query_vport_state_out.state.
enum VportState : uint8_t {
  MLX5_VPORT_STATE_DOWN = 0,
  MLX5_VPORT_STATE_UP = 1,
};

inline constexpr std::size_t kEqeDataBytes = 28;
// Completion event: the CQ number (24 bits used) in the data's last word (EQE bytes 56-59).
inline constexpr std::size_t kEqeCompletionCqnOffset = 24;
// CQ error event: the CQ number in the data's first word, the syndrome in data byte 11.
inline constexpr std::size_t kEqeCqErrorSyndromeByte = 11;

namespace pod {

struct mlx5_eqe {
  uint8_t rsvd0;
  uint8_t type;  // EventType
  uint8_t rsvd1;
  uint8_t sub_type;
  uint8_t rsvd2[28];
  std::byte data[kEqeDataBytes];
  uint8_t rsvd3[2];
  uint8_t signature;
  uint8_t owner;
};
static_assert(sizeof(mlx5_eqe) == 64 && offsetof(mlx5_eqe, data) == 32 &&
              offsetof(mlx5_eqe, owner) == 63);

}  // namespace pod

// The data of an event that names one queue by number in the word at `offset`.
inline std::array<std::byte, kEqeDataBytes> EqeQueueData(std::size_t offset, uint32_t number) {
  std::array<std::byte, kEqeDataBytes> d{};
  const Be32 be = Be32::FromHost(number & 0xffffff);
  const uint32_t raw = be.raw();
  for (std::size_t i = 0; i < 4; ++i) d[offset + i] = static_cast<std::byte>(raw >> (8 * i));
  return d;
}

}  // namespace onchip::prm
