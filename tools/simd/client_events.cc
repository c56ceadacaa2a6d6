#include "tools/simd/client_events.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "tools/simd/client_window.h"

namespace onchip::simd {
namespace {

constexpr uint64_t kEqeBytes = 64;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kOwnerByte = 63;  // struct mlx5_eqe: the owner bit in byte 63
constexpr uint32_t kEntries = uint32_t{1} << ClientEvents::kLogEntries;
static_assert(kEntries * kEqeBytes == kPage);
static_assert(ClientWindow::kEventCiOffset == ClientWindow::kEventRingOffset + kPage);

}  // namespace

Result<std::unique_ptr<ClientEvents>> ClientEvents::Create(int window_fd) {
  void* p = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, window_fd,
                 ClientWindow::kEventRingOffset);
  if (p == MAP_FAILED) return Fail(errno, "simd: map the client's event ring");
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    const int e = errno;
    munmap(p, 2 * kPage);
    return Fail(e, "simd: eventfd for the client's events");
  }
  auto* pages = static_cast<std::byte*>(p);
  // Every slot the producer's before its first pass over the ring (owner 1), as a device
  // leaves an EQ; and nothing taken yet.
  for (uint32_t i = 0; i < kEntries; ++i) pages[i * kEqeBytes + kOwnerByte] = std::byte{1};
  std::memset(pages + kPage, 0, sizeof(uint32_t));
  return std::unique_ptr<ClientEvents>(new ClientEvents(fd, pages));
}

ClientEvents::~ClientEvents() {
  munmap(pages_, 2 * kPage);
  close(fd_);
}

void ClientEvents::Forward(const prm::pod::mlx5_eqe& eqe) {
  std::lock_guard lock(mu_);
  const uint32_t taken =
      std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(pages_ + kPage)).load(std::memory_order_acquire);
  if (produced_ - taken >= kEntries) {  // full, or a count the client garbled
    ++dropped_;
    return;
  }
  std::byte* slot = pages_ + (produced_ & (kEntries - 1)) * kEqeBytes;
  std::memcpy(slot, &eqe, kOwnerByte);
  // The owner bit says whose the slot is on this pass over the ring: written last.
  const std::byte others = reinterpret_cast<const std::byte*>(&eqe)[kOwnerByte] & std::byte{0xfe};
  const auto owner = static_cast<std::byte>((produced_ >> kLogEntries) & 1);
  std::atomic_ref<std::byte>(slot[kOwnerByte]).store(owner | others, std::memory_order_release);
  ++produced_;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
}

uint64_t ClientEvents::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace onchip::simd
