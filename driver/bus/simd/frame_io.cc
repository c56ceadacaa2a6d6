#include "driver/bus/simd/frame_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onchip::simd {

Frame::Frame(Frame&& o) noexcept { *this = std::move(o); }

Frame& Frame::operator=(Frame&& o) noexcept {
  if (this != &o) {
    for (int fd : fds)
      if (fd >= 0) close(fd);
    header = o.header;
    payload = std::move(o.payload);
    fds = std::move(o.fds);
    o.fds.clear();
  }
  return *this;
}

Frame::~Frame() {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

int Frame::TakeFd(std::size_t i) {
  if (i >= fds.size()) return -1;
  const int fd = fds[i];
  fds[i] = -1;
  return fd;
}

Result<void> SendFrame(int sock, MessageType type, uint32_t status,
                       std::initializer_list<std::span<const std::byte>> parts,
                       std::span<const int> fds) {
  if (fds.size() > kMaxFds) return Fail(EINVAL, "simd: too many fds for one frame");
  FrameHeader header;
  header.type = static_cast<uint16_t>(type);
  header.status = status;
  uint64_t total = 0;
  for (auto p : parts) total += p.size();
  if (total > kMaxPayload) return Fail(EMSGSIZE, "simd: payload above the protocol's limit");
  header.length = static_cast<uint32_t>(total);

  std::vector<iovec> iov;
  iov.push_back({&header, sizeof(header)});
  for (auto p : parts)
    if (!p.empty()) iov.push_back({const_cast<std::byte*>(p.data()), p.size()});

  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  std::size_t sent = 0;
  const std::size_t want = sizeof(header) + total;
  std::size_t first = 0;  // the first iovec not wholly sent
  bool fds_sent = fds.empty();
  while (sent < want) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = iov.size() - first;
    if (!fds_sent) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno, "simd: send a frame");
    }
    fds_sent = true;
    sent += static_cast<std::size_t>(n);
    // Skip what went out.
    std::size_t left = static_cast<std::size_t>(n);
    while (left > 0 && first < iov.size()) {
      if (left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
        left = 0;
      }
    }
  }
  return {};
}

namespace {

// Reads exactly `length` bytes; EIO on EOF.
Result<void> ReadAll(int sock, std::byte* p, std::size_t length) {
  while (length > 0) {
    const ssize_t n = recv(sock, p, length, 0);
    if (n == 0) return Fail(EIO, "simd: connection closed inside a frame");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno, "simd: receive a frame");
    }
    p += n;
    length -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

Result<Frame> RecvFrame(int sock) {
  Frame frame;
  auto* head = reinterpret_cast<std::byte*>(&frame.header);
  std::size_t got = 0;
  // The header's first bytes carry the fds; read them with recvmsg until the header is whole.
  while (got < sizeof(FrameHeader)) {
    iovec iov{head + got, sizeof(FrameHeader) - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n == 0) return Fail(EIO, "simd: connection closed");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail(errno, "simd: receive a frame");
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        frame.fds.push_back(fd);  // owned now: closed with the frame on any failure
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) return Fail(EPROTO, "simd: too many fds with a frame");
    got += static_cast<std::size_t>(n);
  }
  if (frame.header.magic != kMagic || frame.header.version != kVersion)
    return Fail(EPROTO, "simd: bad frame magic or version");
  if (frame.header.length > kMaxPayload) return Fail(EPROTO, "simd: frame length above the limit");
  if (frame.fds.size() > kMaxFds) return Fail(EPROTO, "simd: too many fds with a frame");
  frame.payload.resize(frame.header.length);
  ONCHIP_CHECK(ReadAll(sock, frame.payload.data(), frame.payload.size()));
  return frame;
}

}  // namespace onchip::simd
