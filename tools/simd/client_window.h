// A client's view of its function's BAR0: what the daemon hands a client instead of BAR0.
//
// The kernel lets no process map a function's BAR: a context gets its own UAR pages, its
// device-memory pages and the clock page, read-only (drivers/infiniband/hw/mlx5/main.c,
// mlx5_ib_mmap). A client of the daemon gets the same, as one file it maps whole where a driver
// maps BAR0 (vpci::Function::bar0): a memfd of BAR0's size, sealed against shrinking and growing
// (the device stores into its pages and must never fault), in which
//   - page 0 is a copy of the init segment's first page as the device published it at hello
//     (firmware and command interface revisions, the health buffer), with no command queue
//     address and no command doorbell: the client's commands go over its connection;
//   - the clock page (sim::Bar0::clock_fd) is mapped over Bar0::kClockPageOffset read-only
//     (vpci::Function::bar0_read_only_page), so the internal timer and the health word tick;
//   - the page of vpci::kEngineSleepWordOffset holds the client's own sleep word, which the
//     device stores and waits on beside its own (sim::Device::AddSleepWord);
//   - the UAR pages ALLOC_UAR gives the client, and the MEMIC pages its allocations lie in
//     (memic_pages.h), are the device's view too: the daemon backs the device's mapping of those
//     BAR0 pages with this file's pages (sim::Bar0::BackPages) until the client frees them or
//     goes, zeroing them first.
// Any other page is the client's alone: what it stores there reaches no device and no client.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "tools/simd/memic_pages.h"
#include "tools/sim/device.h"
#include "uapi/result.h"

namespace onchip::simd {

class ClientWindow {
 public:
  // The window of client `client` on `device`, whose MEMIC pages `memic` keeps.
  static Result<std::unique_ptr<ClientWindow>> Create(sim::Device& device, MemicPages& memic,
                                                      uint32_t client);
  // Restores every page it backs and removes the sleep word (takes memic's lock itself).
  ~ClientWindow();
  ClientWindow(const ClientWindow&) = delete;
  ClientWindow& operator=(const ClientWindow&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }

  // Why the client may not issue command `in` (static text), or nullptr: an ALLOC_MEMIC range
  // with a page of another client's. Call with memic's lock held for ALLOC_MEMIC.
  const char* Refusal(std::span<const std::byte> in) const;
  // After a command the firmware executed: backs the pages ALLOC_UAR and ALLOC_MEMIC gave,
  // restores those DEALLOC_UAR and DEALLOC_MEMIC freed. Call with memic's lock held for the
  // MEMIC opcodes. A page that cannot be backed is reported and the client's stores there reach
  // nothing (the device keeps BAR0's own page).
  void AfterCommand(std::span<const std::byte> in, std::span<const std::byte> out);

 private:
  ClientWindow(sim::Device& device, MemicPages& memic, uint32_t client, int fd, uint64_t size)
      : device_(device), memic_(memic), client_(client), fd_(fd), size_(size) {}
  Result<void> Publish();
  void Back(uint64_t offset, const char* what);
  void Restore(uint64_t offset);

  sim::Device& device_;
  MemicPages& memic_;
  const uint32_t client_;
  const int fd_;
  const uint64_t size_;
  std::byte* sleep_page_ = nullptr;  // the daemon's mapping of the client's sleep-word page
  std::set<uint32_t> uars_;                 // UAR indices backed
  std::map<uint64_t, uint64_t> memic_allocations_;  // start -> size, as ALLOC_MEMIC gave them
};

}  // namespace onchip::simd
