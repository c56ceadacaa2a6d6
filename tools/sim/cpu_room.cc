#include "tools/sim/cpu_room.h"

#include <fcntl.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace onchip::sim {

CpuRoom::CpuRoom(std::chrono::microseconds refresh)
    : refresh_(refresh), cpus_(get_nprocs()), fd_(open("/proc/loadavg", O_RDONLY | O_CLOEXEC)) {}

CpuRoom::~CpuRoom() {
  if (fd_ >= 0) close(fd_);
}

int CpuRoom::RunnableIn(const char* text) {
  // "0.50 0.40 0.30 3/150 1234": three load averages, then running/total, then the last pid.
  const char* p = text;
  for (int field = 0; field < 3; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return -1;
    ++p;
  }
  char* end = nullptr;
  const long running = std::strtol(p, &end, 10);
  if (end == p || *end != '/' || running < 0) return -1;
  return static_cast<int>(running);
}

bool CpuRoom::Spare(std::chrono::steady_clock::time_point now) {
  if (read_once_ && now - read_at_ < refresh_) return spare_;
  read_once_ = true;
  read_at_ = now;
  spare_ = false;
  if (fd_ < 0) return spare_;
  char text[128];
  const ssize_t n = pread(fd_, text, sizeof text - 1, 0);
  if (n <= 0) return spare_;
  text[n] = '\0';
  const int running = RunnableIn(text);
  spare_ = running > 0 && running <= cpus_;
  return spare_;
}

}  // namespace onchip::sim
