#include "tools/sim/iommu.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace onchip::sim {
namespace {
constexpr uint64_t kPage = 4096;

bool ValidRange(uint64_t iova, uint64_t length) {
  return length != 0 && iova % kPage == 0 && length % kPage == 0 && iova + length >= iova;
}
}  // namespace

Iommu::~Iommu() {
  for (const auto& [iova, m] : mappings_)
    if (m.pidfd >= 0) close(m.pidfd);
}

Result<void> Iommu::Insert(uint64_t iova, const Mapping& m) {
  std::unique_lock lock(mutex_);
  auto next = mappings_.lower_bound(iova);
  if (next != mappings_.end() && next->first < iova + m.length)
    return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  if (next != mappings_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > iova)
      return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  }
  mappings_.emplace(iova, m);
  return {};
}

Result<void> Iommu::Map(const vpci::DmaRegion& r) {
  if (!ValidRange(r.iova, r.length) || r.host == nullptr)
    return Fail(EINVAL, "sim iommu: map: unaligned, empty or wrapping region");
  return Insert(r.iova, Mapping{r.length, static_cast<std::byte*>(r.host), 0, 0, -1});
}

Result<void> Iommu::MapProcess(uint64_t iova, uint64_t length, pid_t pid,
                               uint64_t remote_address) {
  if (!ValidRange(iova, length) || remote_address == 0 || remote_address % kPage != 0 ||
      remote_address + length < remote_address || pid <= 0)
    return Fail(EINVAL, "sim iommu: map process memory: unaligned, empty or wrapping region");
  // Ask the kernel now, so a refusal is the registration's error and not a failed DMA later.
  std::byte probe{};
  const iovec local{&probe, 1};
  const iovec remote{reinterpret_cast<void*>(remote_address), 1};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != 1) {
    switch (errno) {
      case EPERM:
        return Fail(EPERM,
                    "sim iommu: map process memory: the kernel refuses process_vm_readv on the "
                    "client (ptrace access): run the device as the client's user, or with "
                    "CAP_SYS_PTRACE; under Yama ptrace_scope 1 the client must allow it with "
                    "prctl(PR_SET_PTRACER, device pid) or the scope must be 0");
      case ESRCH:
        return Fail(ESRCH, "sim iommu: map process memory: no such process");
      default:
        return Fail(EFAULT, "sim iommu: map process memory: the address is not mapped in the client");
    }
  }
  // Kernels before 5.3 have no pidfds: then the pid alone names the process.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0 && errno != ENOSYS) {
    if (errno == ESRCH) return Fail(ESRCH, "sim iommu: map process memory: no such process");
    return Fail(errno, "sim iommu: map process memory: pidfd_open");
  }
  auto inserted = Insert(iova, Mapping{length, nullptr, pid, remote_address, pidfd});
  if (!inserted && pidfd >= 0) close(pidfd);
  return inserted;
}

Result<void> Iommu::Unmap(uint64_t iova, uint64_t length) {
  std::unique_lock lock(mutex_);
  auto it = mappings_.find(iova);
  if (it == mappings_.end() || it->second.length != length)
    return Fail(ENOENT, "sim iommu: unmap: no such mapping");
  if (it->second.pidfd >= 0) close(it->second.pidfd);
  for (auto& entry : iotlb_)
    if (entry.load(std::memory_order_relaxed) == &*it) entry.store(nullptr, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_relaxed);
  mappings_.erase(it);
  return {};
}

std::size_t Iommu::mapping_count() const {
  std::shared_lock lock(mutex_);
  return mappings_.size();
}

const Iommu::Mapping* Iommu::FindLocked(uint64_t iova, uint64_t len, uint64_t* offset) const {
  if (len == 0 || iova + len < iova) return nullptr;
  auto covers = [&](const std::pair<const uint64_t, Mapping>& m) {
    return iova >= m.first && iova - m.first < m.second.length &&
           len <= m.second.length - (iova - m.first);
  };
  auto& entry = iotlb_[(iova >> 12) % kIotlbEntries];
  if (const Node* hit = entry.load(std::memory_order_relaxed); hit != nullptr && covers(*hit)) {
    *offset = iova - hit->first;
    return &hit->second;
  }
  auto it = mappings_.upper_bound(iova);
  if (it == mappings_.begin()) return nullptr;
  --it;
  if (!covers(*it)) return nullptr;
  entry.store(&*it, std::memory_order_relaxed);
  *offset = iova - it->first;
  return &it->second;
}

namespace {
// False once the process behind the pidfd has exited (its pidfd turns readable): from then on
// its pid may name another process.
bool Alive(int pidfd) {
  if (pidfd < 0) return true;
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}
}  // namespace

bool Iommu::ProcessRead(const Mapping& m, uint64_t offset, std::span<std::byte> out) {
  if (!Alive(m.pidfd)) return false;
  const iovec local{out.data(), out.size()};
  const iovec remote{reinterpret_cast<void*>(m.remote + offset), out.size()};
  // One local and one remote vector: a short count means the copy stopped at a fault.
  return process_vm_readv(m.pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(out.size());
}

bool Iommu::ProcessWrite(const Mapping& m, uint64_t offset, std::span<const std::byte> in) {
  if (!Alive(m.pidfd)) return false;
  const iovec local{const_cast<std::byte*>(in.data()), in.size()};
  const iovec remote{reinterpret_cast<void*>(m.remote + offset), in.size()};
  return process_vm_writev(m.pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(in.size());
}

std::mutex& Iommu::ProcessAtomicMutex() {
  static std::mutex mutex;
  return mutex;
}

namespace {
// The IOMMU whose shared lock this thread holds through an outer Access, if any.
thread_local const Iommu* t_held = nullptr;
}  // namespace

Iommu::Access::Access(const Iommu& iommu) : iommu_(iommu), outer_(t_held), owns_lock_(t_held != &iommu) {
  if (!owns_lock_) return;
  iommu.mutex_.lock_shared();
  t_held = &iommu;
}

Iommu::Access::Access(const Iommu& iommu, std::try_to_lock_t)
    : iommu_(iommu), outer_(t_held), owns_lock_(t_held != &iommu) {
  if (!owns_lock_) return;
  if (!iommu.mutex_.try_lock_shared()) {
    owns_lock_ = held_ = false;
    return;
  }
  t_held = &iommu;
}

Iommu::Access::~Access() {
  if (!owns_lock_) return;
  t_held = outer_;
  iommu_.mutex_.unlock_shared();
}

std::byte* Iommu::Access::Translate(uint64_t iova, uint64_t len) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, len, &offset);
  return m != nullptr && m->host != nullptr ? m->host + offset : nullptr;
}

std::byte* Iommu::Access::TranslateAndRemember(uint64_t iova, uint64_t len,
                                              CachedTranslation& cache) const {
  std::byte* host = Translate(iova, len);
  if (host == nullptr) return nullptr;
  cache = {.iova = iova,
           .len = len,
           .generation = iommu_.generation_.load(std::memory_order_relaxed),
           .host = host};
  return host;
}

bool Iommu::Access::Mapped(uint64_t iova, uint64_t len) const {
  uint64_t offset = 0;
  return iommu_.FindLocked(iova, len, &offset) != nullptr;
}

bool Iommu::Access::Read(uint64_t iova, std::span<std::byte> out) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, out.size(), &offset);
  if (m == nullptr) return false;
  if (m->host == nullptr) return ProcessRead(*m, offset, out);
  std::memcpy(out.data(), m->host + offset, out.size());
  return true;
}

bool Iommu::Access::Append(uint64_t iova, uint64_t len, std::vector<std::byte>& out) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, len, &offset);
  if (m == nullptr) return false;
  if (m->host != nullptr) {
    out.insert(out.end(), m->host + offset, m->host + offset + len);
    return true;
  }
  const std::size_t at = out.size();
  out.resize(at + len);
  if (ProcessRead(*m, offset, std::span(out).subspan(at))) return true;
  out.resize(at);
  return false;
}

bool Iommu::Access::Write(uint64_t iova, std::span<const std::byte> in) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, in.size(), &offset);
  if (m == nullptr) return false;
  if (m->host == nullptr) return ProcessWrite(*m, offset, in);
  std::memcpy(m->host + offset, in.data(), in.size());
  return true;
}

bool Iommu::Access::WriteHandover(uint64_t iova, std::span<const std::byte> in) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, in.size(), &offset);
  if (m == nullptr) return false;
  const std::size_t body = in.size() - 1;
  if (m->host == nullptr) {
    // The body's write has returned before the last byte's starts: the reader that sees the
    // last byte sees the body (process_vm_writev stores through the kernel, then returns).
    return ProcessWrite(*m, offset, in.first(body)) &&
           ProcessWrite(*m, offset + body, in.subspan(body));
  }
  StoreHandover(m->host + offset, in);
  return true;
}

void Iommu::StoreHandover(std::byte* p, std::span<const std::byte> in) {
  const std::size_t body = in.size() - 1;
  std::memcpy(p, in.data(), body);
  std::atomic_ref<std::byte>(p[body]).store(in[body], std::memory_order_release);
}

std::optional<uint32_t> Iommu::Access::LoadAcquire32(uint64_t iova) const {
  if (iova % 4 != 0) return std::nullopt;
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, 4, &offset);
  if (m == nullptr) return std::nullopt;
  uint32_t raw = 0;
  if (m->host == nullptr) {
    // No fence: what the device reads after this word it reads with later system calls, each a
    // copy the kernel makes after this one returned.
    if (!ProcessRead(*m, offset, std::as_writable_bytes(std::span(&raw, 1)))) return std::nullopt;
    return raw;
  }
  if (reinterpret_cast<uintptr_t>(m->host + offset) % 4 != 0) return std::nullopt;
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(m->host + offset))
      .load(std::memory_order_acquire);
}

bool Iommu::Read(uint64_t iova, std::span<std::byte> out) const {
  return Access(*this).Read(iova, out);
}

bool Iommu::Write(uint64_t iova, std::span<const std::byte> in) const {
  return Access(*this).Write(iova, in);
}

bool Iommu::IsMapped(uint64_t iova, uint64_t len) const { return Access(*this).Mapped(iova, len); }

}  // namespace onchip::sim
