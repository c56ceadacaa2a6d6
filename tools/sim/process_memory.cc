#include "tools/sim/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>

namespace onchip::sim {
namespace {

// The whole of a small /proc file from its start (maps grows with the process; read until the
// end).
bool ReadWhole(int fd, std::string& out) {
  if (lseek(fd, 0, SEEK_SET) != 0) return false;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return n == 0;
}

// Walks /proc/PID/maps over [address, end): false on a gap or an unreadable mapping; notes the
// read-only stretches as offsets from address.
bool CheckMaps(const std::string& maps, uint64_t address, uint64_t end,
               std::vector<std::pair<uint64_t, uint64_t>>& read_only) {
  uint64_t cursor = address;
  std::size_t at = 0;
  while (cursor < end && at < maps.size()) {
    const std::size_t eol = std::min(maps.find('\n', at), maps.size());
    const std::string line = maps.substr(at, eol - at);
    at = eol + 1;
    uint64_t start = 0, stop = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %4s", &start, &stop, perms) != 3)
      return false;
    if (stop <= cursor) continue;
    if (start > cursor || perms[0] != 'r') return false;  // a hole, or a page no pin could take
    const uint64_t upto = std::min(stop, end);
    if (perms[1] != 'w') {
      if (!read_only.empty() && read_only.back().second == cursor - address)
        read_only.back().second = upto - address;
      else
        read_only.emplace_back(cursor - address, upto - address);
    }
    cursor = upto;
  }
  return cursor >= end;
}

}  // namespace

Result<std::shared_ptr<const ProcessFile>> ProcessFile::Open(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(pid));
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    switch (errno) {
      case ENOENT:
        return Fail(ESRCH, "sim iommu: map process memory: no such process");
      case EACCES:
      case EPERM:
        return Fail(EPERM,
                    "sim iommu: map process memory: the kernel refuses ptrace access to the "
                    "client: run the device as the client's user, or with CAP_SYS_PTRACE; under "
                    "Yama ptrace_scope 1 the client must allow it with prctl(PR_SET_PTRACER, "
                    "device pid) or the scope must be 0");
      default:
        return Fail(errno, "sim iommu: map process memory: open /proc/PID/mem");
    }
  }
  std::snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(pid));
  const int maps_fd = open(path, O_RDONLY | O_CLOEXEC);
  if (maps_fd < 0) {
    const int e = errno == ENOENT ? ESRCH : errno;
    close(fd);
    return Fail(e, "sim iommu: map process memory: open /proc/PID/maps");
  }
  return std::shared_ptr<const ProcessFile>(new ProcessFile(pid, fd, maps_fd));
}

Result<std::shared_ptr<const ProcessFile>> ProcessFile::Adopt(int mem_fd, int maps_fd, pid_t pid) {
  if (mem_fd < 0 || maps_fd < 0) {
    if (mem_fd >= 0) close(mem_fd);
    if (maps_fd >= 0) close(maps_fd);
    return Fail(EBADF, "sim iommu: a process's address space: no mem or maps file");
  }
  return std::shared_ptr<const ProcessFile>(new ProcessFile(pid, mem_fd, maps_fd));
}

ProcessFile::~ProcessFile() {
  close(fd_);
  close(maps_fd_);
}

bool ProcessFile::ReadMaps(std::string& out) const {
  std::lock_guard lock(maps_mutex_);
  return ReadWhole(maps_fd_, out);
}

bool ProcessFile::Reaches(uint64_t address) const {
  std::byte b;
  return pread(fd_, &b, 1, static_cast<off_t>(address)) == 1;
}

Result<ProcessMemory> ProcessMemory::Open(std::shared_ptr<const ProcessFile> file,
                                          uint64_t address, uint64_t length) {
  std::string maps;
  if (!file->ReadMaps(maps) || maps.empty())
    return Fail(ESRCH, "sim iommu: map process memory: the process is gone");
  ProcessMemory memory(std::move(file), address, length);
  if (!CheckMaps(maps, address, address + length, memory.read_only_))
    return Fail(EFAULT, "sim iommu: map process memory: a page of the range is not mapped, or "
                        "not readable, in the client");
  return memory;
}

Result<ProcessMemory> ProcessMemory::Open(pid_t pid, uint64_t address, uint64_t length) {
  auto file = ProcessFile::Open(pid);
  if (!file) return std::unexpected(file.error());
  return Open(std::move(*file), address, length);
}

bool ProcessMemory::Read(uint64_t offset, std::span<std::byte> out) const {
  if (offset > length_ || out.size() > length_ - offset) return false;
  // A short count means the copy stopped at a fault; 0 once the address space is gone.
  return pread(file_->fd(), out.data(), out.size(), static_cast<off_t>(address_ + offset)) ==
         static_cast<ssize_t>(out.size());
}

bool ProcessMemory::Write(uint64_t offset, std::span<const std::byte> in) const {
  if (offset > length_ || in.size() > length_ - offset) return false;
  for (const auto& [begin, end] : read_only_)
    if (offset < end && offset + in.size() > begin) return false;
  return pwrite(file_->fd(), in.data(), in.size(), static_cast<off_t>(address_ + offset)) ==
         static_cast<ssize_t>(in.size());
}

}  // namespace onchip::sim
