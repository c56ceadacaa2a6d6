// The device daemon's socket protocol: how a client process reaches one function of a software
// ConnectX served by tools/simd over a UNIX stream socket (the "simd:<socket>" locator).
//
// It carries the virtual PCI function contract (uapi/vpci.h) plus the one thing a shared function
// needs beyond it: firmware commands go to the daemon, which owns the command queue, as the
// kernel owns it under DEVX. Every message is a frame: a fixed 24-byte header followed by
// `length` payload bytes; file descriptors travel beside a frame as SCM_RIGHTS ancillary data.
// All integers are little-endian (both ends run on the same host; static_assert below) and every
// length is checked by the receiver before it reads a byte of payload.
//
// A connection is one client of one function:
//   client -> kHello (HelloRequest)            daemon -> kHello (HelloReply) + fds: the
//                                              client's BAR0 window (a memfd it maps whole where
//                                              a driver maps BAR0: its own UAR and MEMIC pages,
//                                              its own sleep word; tools/simd/client_window.h),
//                                              the clock page (read-only, over the window at
//                                              clock_page_offset), the eventfd of the client's
//                                              own interrupt vector (none when all are taken)
//   client -> kCommand (CommandRequest + input bytes)
//                                              daemon -> kCommand (CommandReply + output bytes)
//   client -> kMapDma (MapDmaRequest) + 0 or 1 fd        daemon -> kMapDma (status only)
//   client -> kUnmapDma (UnmapDmaRequest)      daemon -> kUnmapDma (status only)
//   client -> kUpdateMkey (UpdateMkeyRequest)  daemon -> kUpdateMkey (status only): the PD or
//                                              access of an MR the client owns changes in place
//                                              by the daemon's own REG_UMR QP, as mlx5_ib's
//                                              rereg_user_mr does; the keys stay
//   client -> kSteeringTag (SteeringTagRequest) daemon -> kSteeringTag (SteeringTagReply): one
//                                              reference to an entry of the function's TPH ST
//                                              table, which the daemon programs, or one dropped
//   anyone -> kStatus (no payload, no hello)   daemon -> kStatus (UTF-8 JSON text), then closes
// Requests are answered in order, one reply per request; `status` in a reply header is 0 or a
// positive errno (the reply payload then holds a UTF-8 reason). A malformed frame (bad magic,
// version, type or length) is answered with EPROTO and the connection is closed; the daemon
// then releases everything the client owned, exactly as when the client exits.
#pragma once

#include <bit>
#include <cstdint>

namespace onchip::simd {

static_assert(std::endian::native == std::endian::little, "the protocol is little-endian");

inline constexpr uint32_t kMagic = 0x4453434f;  // "OCSD"
inline constexpr uint16_t kVersion = 3;  // 3: a window of the client's own instead of BAR0
// The largest payload either side accepts: a command input of a few thousand MTT entries, or
// the status text.
inline constexpr uint32_t kMaxPayload = 4u << 20;
// The most fds one frame carries (the window, the clock page and the interrupt vectors).
inline constexpr uint32_t kMaxFds = 40;

enum class MessageType : uint16_t {
  kHello = 1,
  kCommand = 2,
  kMapDma = 3,
  kUnmapDma = 4,
  kStatus = 5,
  kUpdateMkey = 6,
  kSteeringTag = 7,
};

struct FrameHeader {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t type = 0;     // MessageType
  uint32_t length = 0;   // payload bytes after the header
  uint32_t status = 0;   // replies: 0 or a positive errno; requests: 0
  uint64_t reserved = 0;
};
static_assert(sizeof(FrameHeader) == 24);

struct HelloRequest {
  uint32_t function = 0;  // which function of the daemon (0-based)
  uint32_t pid = 0;       // informational; the daemon trusts SO_PEERCRED
};
static_assert(sizeof(HelloRequest) == 8);

struct HelloReply {
  uint64_t bar0_size = 0;  // the window's size: BAR0's
  uint64_t iova_base = 0;  // the client's IOVA window: [iova_base, iova_base + iova_size)
  uint64_t iova_size = 0;
  uint64_t tph_st_table_offset = 0;
  // 0 for a client: its window does not reach the device's ST table; it takes entries with
  // kSteeringTag instead, as mlx5_ib's users take them from mlx5_core (mlx5_st_alloc_index).
  uint16_t tph_st_table_size = 0;
  uint16_t uid = 0;                // the owner tag the daemon stamps on this client's commands
  uint16_t interrupt_vectors = 0;  // eventfds after the window and the clock page: 1, or 0
  uint16_t functions = 0;          // how many functions the daemon serves
  uint32_t client_id = 0;
  // The MSI-X vector that eventfd signals: the client's own, as the kernel gives each devx user
  // its own vectors; its EQs must name it (eqc.intr), and the daemon refuses any other.
  uint16_t interrupt_vector = 0;
  uint16_t reserved = 0;
  uint64_t clock_page_offset = 0;  // where the clock page goes over the window (4 KiB aligned)
};
static_assert(sizeof(HelloReply) == 56);

struct CommandRequest {
  uint32_t out_length = 0;  // bytes of output the client expects (>= 16)
  uint32_t in_length = 0;   // input bytes that follow
};
static_assert(sizeof(CommandRequest) == 8);

struct CommandReply {
  // 0: the command was delivered and the output follows (its own status says what the firmware
  // decided); else the delivery errno (EPERM: not a command user space may issue).
  uint32_t delivery_errno = 0;
  uint32_t out_length = 0;  // output bytes that follow
};
static_assert(sizeof(CommandReply) == 8);

struct MapDmaRequest {
  uint64_t iova = 0;
  uint64_t length = 0;
  uint64_t fd_offset = 0;  // with an fd: where the region starts in it
  uint64_t host = 0;       // the address in the client (memory without an fd)
  uint32_t has_fd = 0;     // 1: one fd rides with the frame
  uint32_t reserved = 0;
};
static_assert(sizeof(MapDmaRequest) == 40);

struct UnmapDmaRequest {
  uint64_t iova = 0;
  uint64_t length = 0;
};
static_assert(sizeof(UnmapDmaRequest) == 16);

// An in-place change of an MR the client created (CREATE_MKEY with umr_en): `fields` says which
// of the PD and the access flags to change (kUpdateMkeyPd | kUpdateMkeyAccess, at least one).
// EPERM when the key or the PD is not the client's, EINVAL for unknown access bits; the reply's
// status is the UMR's errno otherwise (EIO with the completion's syndrome in the reason).
inline constexpr uint32_t kUpdateMkeyPd = 1;
inline constexpr uint32_t kUpdateMkeyAccess = 2;
struct UpdateMkeyRequest {
  uint32_t mkey = 0;    // the full key (index << 8 | variant), as lkey and rkey carry it
  uint32_t fields = 0;  // kUpdateMkeyPd | kUpdateMkeyAccess
  uint32_t pdn = 0;
  uint32_t access = 0;  // IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC
};
static_assert(sizeof(UpdateMkeyRequest) == 16);

// The ST table entry of (cpu, mem_type) (driver/steering_tags.h): kSteeringTagAcquire takes one
// reference and the reply names the entry; kSteeringTagRelease drops one the client holds
// (`index`; ENOENT when it holds none). Acquire: EINVAL for an unknown mem_type, EOPNOTSUPP
// without a table, ENOSPC when it is full, EAGAIN past the client's quota of entries.
inline constexpr uint32_t kSteeringTagAcquire = 1;
inline constexpr uint32_t kSteeringTagRelease = 2;
struct SteeringTagRequest {
  uint32_t op = 0;  // kSteeringTagAcquire or kSteeringTagRelease
  uint32_t cpu = 0;
  uint8_t mem_type = 0;  // IBV_TPH_MEM_TYPE_VM or _PM
  uint8_t index = 0;     // release: the entry
  uint16_t reserved = 0;
};
static_assert(sizeof(SteeringTagRequest) == 12);

struct SteeringTagReply {
  uint8_t index = 0;
  uint8_t reserved[7] = {};
};
static_assert(sizeof(SteeringTagReply) == 8);

}  // namespace onchip::simd
