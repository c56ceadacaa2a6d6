// A range of another process's memory that the software ConnectX reaches by copying: the
// IOMMU's process memory (iommu.h, MapProcess).
//
// The device holds the process's /proc/PID/mem (ProcessFile), opened at map time and shared by
// every range of that process: a client with thousands of MRs costs the device one descriptor,
// not thousands. The file is bound to the address space the process had when it was opened, not
// to its pid, so after the process exits (or execs) every transfer returns nothing (a failed
// access) even once the kernel gives the pid to a new process. A transfer is one pread or pwrite
// (the kernel's access_remote_vm, the debugger's path) with no check of the pid before it.
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
#include <memory>
#include <mutex>
#include <string>
#include <span>
#include <utility>
#include <vector>

#include "uapi/result.h"

namespace onchip::sim {

// One process's address space: its /proc/PID/mem, open for reading and writing, and its
// /proc/PID/maps, both bound to the address space they were opened on (the kernel's
// proc_mem_open takes the mm at open); closed with the last holder.
class ProcessFile {
 public:
  // Opens both by pid. EPERM (with the remedy in the message) when the kernel refuses ptrace
  // access to `pid`, ESRCH when there is no such process.
  static Result<std::shared_ptr<const ProcessFile>> Open(pid_t pid);
  // A process's own /proc/self/mem and /proc/self/maps, as it opened them and passed them over a
  // socket (the device daemon's hello): the device reaches exactly the address space the
  // process had when it opened them, with the access the process itself has, whatever the
  // device's own privileges and whatever the pid comes to name later. Takes both fds; `pid` is
  // for messages only. EBADF when an fd is negative.
  static Result<std::shared_ptr<const ProcessFile>> Adopt(int mem_fd, int maps_fd, pid_t pid);
  ~ProcessFile();
  ProcessFile(const ProcessFile&) = delete;
  ProcessFile& operator=(const ProcessFile&) = delete;

  pid_t pid() const { return pid_; }
  int fd() const { return fd_; }
  // Whether the byte at `address` reads through this file: false once the address space it was
  // opened on is gone (the process exited or called execve), or where nothing is mapped.
  bool Reaches(uint64_t address) const;
  // The address space's mappings now, as /proc/PID/maps lists them; false once it is gone.
  bool ReadMaps(std::string& out) const;

 private:
  ProcessFile(pid_t pid, int fd, int maps_fd) : pid_(pid), fd_(fd), maps_fd_(maps_fd) {}
  pid_t pid_;
  int fd_;       // owned: /proc/PID/mem
  int maps_fd_;  // owned: /proc/PID/maps, read from its start by ReadMaps under maps_mutex_
  mutable std::mutex maps_mutex_;
};

class ProcessMemory {
 public:
  // [address, address + length) of the process `file` reaches, EFAULT when a page of the range
  // is not mapped or not readable there (ESRCH when the process is gone).
  static Result<ProcessMemory> Open(std::shared_ptr<const ProcessFile> file, uint64_t address,
                                    uint64_t length);
  // The same through a file of its own (ProcessFile::Open's errors).
  static Result<ProcessMemory> Open(pid_t pid, uint64_t address, uint64_t length);

  // Copies at `offset` into the range; false when the range does not hold it, the process has
  // exited, or the copy stopped short (the caller turns that into the PRM's error).
  bool Read(uint64_t offset, std::span<std::byte> out) const;
  // The same, and false without writing anything when the bytes touch a read-only stretch.
  bool Write(uint64_t offset, std::span<const std::byte> in) const;

 private:
  ProcessMemory(std::shared_ptr<const ProcessFile> file, uint64_t address, uint64_t length)
      : file_(std::move(file)), address_(address), length_(length) {}

  std::shared_ptr<const ProcessFile> file_;
  uint64_t address_;
  uint64_t length_;
  std::vector<std::pair<uint64_t, uint64_t>> read_only_;  // [begin, end) offsets, ascending
};

}  // namespace onchip::sim
