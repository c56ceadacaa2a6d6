// Whether the device thread may spin: a software device that polls its doorbells holds a CPU,
// and on a machine whose CPUs are all wanted that CPU is a poller's. The poller then waits for a
// scheduler slice (milliseconds) before it can post what the device waits for, so two processes
// in a ping-pong on 2 CPUs took 500 us a round trip. The device thread spins only while the
// machine has a CPU to spare and sleeps otherwise, so that each doorbell pays one wake-up
// instead (device_thread.h).
//
// The measure is the kernel's count of runnable threads (the fourth field of /proc/loadavg,
// "running/total", which counts the reader too; kernel fs/proc/loadavg.c loadavg_proc_show,
// nr_running()) against the CPUs online. One read costs a few microseconds, so a reading
// stands for `refresh`.
#pragma once

#include <chrono>

namespace onchip::sim {

class CpuRoom {
 public:
  explicit CpuRoom(std::chrono::microseconds refresh = std::chrono::milliseconds(1));
  ~CpuRoom();
  CpuRoom(const CpuRoom&) = delete;
  CpuRoom& operator=(const CpuRoom&) = delete;

  // Whether the runnable threads (the caller among them) were at most the online CPUs at the
  // last reading, taken anew when it is older than `refresh`. False when the count cannot be
  // read: spinning blind is what starves a poller.
  bool Spare(std::chrono::steady_clock::time_point now);

  // The runnable threads in /proc/loadavg's text `text`, or -1 when it does not parse.
  static int RunnableIn(const char* text);

 private:
  const std::chrono::microseconds refresh_;
  const int cpus_;
  int fd_ = -1;
  bool spare_ = false;
  std::chrono::steady_clock::time_point read_at_{};
  bool read_once_ = false;
};

}  // namespace onchip::sim
