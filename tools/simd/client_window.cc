#include "tools/simd/client_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/uar_page.h"
#include "uapi/vpci.h"

namespace onchip::simd {
namespace {

constexpr uint64_t kPage = prm::kUarPageBytes;
constexpr uint64_t kSleepPage = vpci::kEngineSleepWordOffset & ~(kPage - 1);

uint16_t Opcode(std::span<const std::byte> in) {
  return static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode));
}

}  // namespace

Result<std::unique_ptr<ClientWindow>> ClientWindow::Create(sim::Device& device, MemicPages& memic,
                                                           uint32_t client) {
  const int fd = memfd_create("onchip-simd-client-bar0", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Fail(errno, "simd: memfd_create (client window)");
  const uint64_t size = device.bar().size();
  // Owned from here: the destructor closes the fd.
  std::unique_ptr<ClientWindow> w(new ClientWindow(device, memic, client, fd, size));
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) return Fail(errno, "simd: size the client window");
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return Fail(errno, "simd: seal the client window");
  ONCHIP_CHECK(w->Publish());
  return w;
}

Result<void> ClientWindow::Publish() {
  // The init segment's first page as the device shows it now, less what drives its commands.
  std::array<std::byte, kPage> page0;
  std::memcpy(page0.data(), device_.bar().base(), kPage);
  for (uint64_t reg : {prm::init_seg::kCmdqAddrH, prm::init_seg::kCmdqAddrLSz, prm::init_seg::kCmdDbell})
    std::memset(page0.data() + reg, 0, sizeof(uint32_t));
  if (pwrite(fd_, page0.data(), kPage, 0) != static_cast<ssize_t>(kPage))
    return Fail(errno, "simd: write the client window's init page");
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, kSleepPage);
  if (p == MAP_FAILED) return Fail(errno, "simd: map the client's sleep word");
  sleep_page_ = static_cast<std::byte*>(p);
  device_.AddSleepWord(
      reinterpret_cast<uint32_t*>(sleep_page_ + (vpci::kEngineSleepWordOffset - kSleepPage)));
  return {};
}

ClientWindow::~ClientWindow() {
  for (uint32_t uar : uars_) Restore(prm::UarPageOffset(uar));
  {
    std::lock_guard lock(memic_.mutex());
    for (const auto& [start, size] : memic_allocations_)
      for (uint64_t page : memic_.Give(start, size, client_)) Restore(page);
  }
  if (sleep_page_ != nullptr) {
    device_.RemoveSleepWord(
        reinterpret_cast<uint32_t*>(sleep_page_ + (vpci::kEngineSleepWordOffset - kSleepPage)));
    munmap(sleep_page_, kPage);
  }
  close(fd_);
}

const char* ClientWindow::Refusal(std::span<const std::byte> in) const {
  if (Opcode(in) != prm::ALLOC_MEMIC || in.size() < prm::size_bytes<prm::alloc_memic_in>)
    return nullptr;
  return memic_.MayUse(prm::Get(in, prm::alloc_memic_in::range_start_addr),
                       prm::Get(in, prm::alloc_memic_in::range_size), client_)
             ? nullptr
             : "ALLOC_MEMIC in a range with another client's device-memory pages";
}

void ClientWindow::AfterCommand(std::span<const std::byte> in, std::span<const std::byte> out) {
  switch (Opcode(in)) {
    case prm::ALLOC_UAR: {
      if (out.size() < prm::size_bytes<prm::alloc_uar_out>) return;
      const auto uar = static_cast<uint32_t>(prm::Get(out, prm::alloc_uar_out::uar));
      if (uars_.insert(uar).second) Back(prm::UarPageOffset(uar), "UAR page");
      return;
    }
    case prm::DEALLOC_UAR: {
      if (in.size() < prm::size_bytes<prm::dealloc_uar_in>) return;
      const auto uar = static_cast<uint32_t>(prm::Get(in, prm::dealloc_uar_in::uar));
      if (uars_.erase(uar) != 0) Restore(prm::UarPageOffset(uar));
      return;
    }
    case prm::ALLOC_MEMIC: {
      if (out.size() < prm::size_bytes<prm::alloc_memic_out>) return;
      const uint64_t start = prm::Get(out, prm::alloc_memic_out::memic_start_addr);
      const uint64_t size = prm::Get(in, prm::alloc_memic_in::memic_size);
      memic_allocations_[start] = size;
      for (uint64_t page : memic_.Take(start, size, client_)) Back(page, "MEMIC page");
      // The firmware zeroed the allocation in the pages the device saw then; a page backed just
      // now holds whatever the client stored in its window before.
      std::memset(device_.bar().base() + start, 0, size);
      return;
    }
    case prm::DEALLOC_MEMIC: {
      const uint64_t start = prm::Get(in, prm::dealloc_memic_in::memic_start_addr);
      auto it = memic_allocations_.find(start);
      if (it == memic_allocations_.end()) return;
      for (uint64_t page : memic_.Give(start, it->second, client_)) Restore(page);
      memic_allocations_.erase(it);
      return;
    }
    default:
      return;
  }
}

void ClientWindow::Back(uint64_t offset, const char* what) {
  // A fresh page, as BAR0's was: nothing the client stored there before counts as a doorbell.
  if (fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                kPage) != 0 ||
      !device_.bar().BackPages(offset, kPage, fd_, offset))
    std::fprintf(stderr, "onchip simd: client %u: cannot give it its %s at BAR0 offset 0x%llx\n",
                 client_, what, static_cast<unsigned long long>(offset));
}

void ClientWindow::Restore(uint64_t offset) {
  if (!device_.bar().RestorePages(offset, kPage))
    std::fprintf(stderr, "onchip simd: client %u: cannot restore BAR0 page 0x%llx\n", client_,
                 static_cast<unsigned long long>(offset));
}

}  // namespace onchip::simd
