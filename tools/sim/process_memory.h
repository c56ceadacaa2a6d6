// A range of another process's memory that the software ConnectX reaches by copying: the
// IOMMU's process memory (iommu.h, MapProcess).
//
// The device holds the process's /proc/PID/mem, opened once at map time: the file is bound to
// that process's address space, not to its pid, so after the process exits every transfer
// returns nothing (a failed access) even once the kernel gives the pid to a new process. A
// transfer is one pread or pwrite (the kernel's access_remote_vm, the debugger's path) with no
// check of the pid before it.
//
// What the kernel pins at registration, Open checks at map time (ib_umem_get in the kernel's
// drivers/infiniband/core/umem.c pins every page or fails with EFAULT): every page of the range
// is mapped and readable in the process. /proc/PID/mem writes with FOLL_FORCE, which would store
// into pages the process mapped read-only, so Open notes the read-only stretches
// (/proc/PID/maps) and Write refuses to touch them, as a pinned read-only page would. Like pinned
// pages, the permissions are those at map time: a later mprotect does not change them.
//
// Permission to open the file is the kernel's ptrace access check (PTRACE_MODE_ATTACH): the same
// uid and a dumpable process, or CAP_SYS_PTRACE; under Yama ptrace_scope 1 also an ancestor or
// the process's PR_SET_PTRACER.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "uapi/result.h"

namespace onchip::sim {

class ProcessMemory {
 public:
  // [address, address + length) of process `pid`. EPERM (with the remedy in the message) when
  // the kernel refuses ptrace access, ESRCH when there is no such process, EFAULT when a page of
  // the range is not mapped or not readable there.
  static Result<ProcessMemory> Open(pid_t pid, uint64_t address, uint64_t length);

  ProcessMemory(ProcessMemory&& other) noexcept;
  ProcessMemory& operator=(ProcessMemory&& other) noexcept;
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;
  ~ProcessMemory();

  // Copies at `offset` into the range; false when the range does not hold it, the process has
  // exited, or the copy stopped short (the caller turns that into the PRM's error).
  bool Read(uint64_t offset, std::span<std::byte> out) const;
  // The same, and false without writing anything when the bytes touch a read-only stretch.
  bool Write(uint64_t offset, std::span<const std::byte> in) const;

 private:
  ProcessMemory(int fd, uint64_t address, uint64_t length,
                std::vector<std::pair<uint64_t, uint64_t>> read_only);

  int fd_;  // /proc/PID/mem, owned
  uint64_t address_;
  uint64_t length_;
  std::vector<std::pair<uint64_t, uint64_t>> read_only_;  // [begin, end) offsets, ascending
};

}  // namespace onchip::sim
