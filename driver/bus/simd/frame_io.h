// Frames of the device daemon's protocol (uapi/simd_protocol.h) on a UNIX stream socket: one
// header, its payload and the fds riding with it (SCM_RIGHTS), sent with one sendmsg and read
// back with the header's length checked before any payload byte is read. Used by both ends: the
// client bus (driver/bus/simd) and the daemon (tools/simd).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <vector>

#include "uapi/result.h"
#include "uapi/simd_protocol.h"

namespace onchip::simd {

// A received frame. It owns the fds that came with it and closes those nobody took.
struct Frame {
  FrameHeader header;
  std::vector<std::byte> payload;
  std::vector<int> fds;

  Frame() = default;
  Frame(Frame&& o) noexcept;
  Frame& operator=(Frame&& o) noexcept;
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
  ~Frame();

  MessageType type() const { return static_cast<MessageType>(header.type); }
  // Takes fd i (the frame no longer closes it); -1 past the end.
  int TakeFd(std::size_t i);
};

// Sends one frame: the header (type, status, length = total of `parts`), the parts in order and
// `fds` as SCM_RIGHTS (at most kMaxFds). EPIPE/ECONNRESET when the peer is gone (no SIGPIPE).
Result<void> SendFrame(int sock, MessageType type, uint32_t status,
                       std::initializer_list<std::span<const std::byte>> parts,
                       std::span<const int> fds = {});

// Reads one frame. EIO when the peer closed the connection (EOF before a whole frame), EPROTO for
// a bad magic, version or a length above kMaxPayload, or more fds than kMaxFds; the syscall's
// errno otherwise. Fds are received close-on-exec.
Result<Frame> RecvFrame(int sock);

// A trivially copyable struct as payload bytes, and back: EPROTO unless the payload holds at
// least sizeof(T) bytes.
template <class T>
std::span<const std::byte> AsBytes(const T& v) {
  return std::as_bytes(std::span<const T, 1>(&v, 1));
}
template <class T>
Result<T> ReadStruct(std::span<const std::byte> payload) {
  if (payload.size() < sizeof(T)) return Fail(EPROTO, "simd: payload shorter than its message");
  T v;
  std::memcpy(&v, payload.data(), sizeof(T));
  return v;
}

}  // namespace onchip::simd
