#include "tools/sim/iommu.h"

#include <bit>
#include <cerrno>
#include <cstring>

namespace onchip::sim {
namespace {
constexpr uint64_t kPage = 4096;

bool ValidRange(uint64_t iova, uint64_t length) {
  return length != 0 && iova % kPage == 0 && length % kPage == 0 && iova + length >= iova;
}
// The same, and the process's range is page aligned, not at 0 and not wrapping either.
bool ValidProcessRange(uint64_t iova, uint64_t length, uint64_t remote_address) {
  return ValidRange(iova, length) && remote_address != 0 && remote_address % kPage == 0 &&
         remote_address + length >= remote_address;
}
}  // namespace

Iommu::~Iommu() = default;

Result<void> Iommu::Insert(uint64_t iova, Mapping m) {
  std::unique_lock lock(mutex_);
  auto next = mappings_.lower_bound(iova);
  if (next != mappings_.end() && next->first < iova + m.length)
    return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  if (next != mappings_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > iova)
      return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  }
  mappings_.emplace(iova, std::move(m));
  return {};
}

Result<void> Iommu::Map(const vpci::DmaRegion& r, uint16_t uid) {
  if (!ValidRange(r.iova, r.length) || r.host == nullptr)
    return Fail(EINVAL, "sim iommu: map: unaligned, empty or wrapping region");
  return Insert(r.iova, Mapping{r.length, static_cast<std::byte*>(r.host), std::nullopt, uid});
}

Result<void> Iommu::MapProcess(uint64_t iova, uint64_t length, pid_t pid,
                               uint64_t remote_address, uint16_t uid) {
  if (pid <= 0) return Fail(EINVAL, "sim iommu: map process memory: no pid");
  if (!ValidProcessRange(iova, length, remote_address))
    return Fail(EINVAL, "sim iommu: map process memory: unaligned, empty or wrapping region");
  auto file = FileOf(pid, remote_address);
  if (!file) return std::unexpected(file.error());
  return MapProcess(iova, length, std::move(*file), remote_address, uid);
}

Result<void> Iommu::MapProcess(uint64_t iova, uint64_t length,
                               std::shared_ptr<const ProcessFile> file, uint64_t remote_address,
                               uint16_t uid) {
  if (file == nullptr || !ValidProcessRange(iova, length, remote_address))
    return Fail(EINVAL, "sim iommu: map process memory: unaligned, empty or wrapping region");
  auto process = ProcessMemory::Open(std::move(file), remote_address, length);
  if (!process) return std::unexpected(process.error());
  return Insert(iova, Mapping{length, nullptr, std::move(*process), uid});
}

Result<std::shared_ptr<const ProcessFile>> Iommu::FileOf(pid_t pid, uint64_t address) {
  std::lock_guard lock(files_mutex_);
  std::erase_if(process_files_, [](const auto& e) { return e.second.expired(); });
  if (auto it = process_files_.find(pid); it != process_files_.end())
    if (auto file = it->second.lock(); file->Reaches(address)) return file;
  // None yet, or one whose address space is gone (the pid's process exited or called execve):
  // a new file reaches the process the pid names now.
  auto file = ProcessFile::Open(pid);
  if (file) process_files_[pid] = *file;
  return file;
}

Result<void> Iommu::Unmap(uint64_t iova, uint64_t length) {
  std::unique_lock lock(mutex_);
  auto it = mappings_.find(iova);
  if (it == mappings_.end() || it->second.length != length)
    return Fail(ENOENT, "sim iommu: unmap: no such mapping");
  for (auto& entry : iotlb_)
    if (entry.load(std::memory_order_relaxed) == &*it) entry.store(nullptr, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_relaxed);
  mappings_.erase(it);
  return {};
}

bool Iommu::RunMappedForLocked(uint16_t uid, uint64_t iova, uint64_t len) const {
  if (len == 0 || iova + len < iova) return false;
  auto it = mappings_.upper_bound(iova);
  if (it == mappings_.begin()) return false;
  --it;
  const uint64_t end = iova + len;
  // Mappings never overlap, so one that starts at or before `at` after the first starts at it.
  for (uint64_t at = iova; it != mappings_.end() && it->first <= at; ++it) {
    if (at - it->first >= it->second.length || it->second.uid != uid) return false;
    at = it->first + it->second.length;
    if (at >= end) return true;
  }
  return false;
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
  if (m->host == nullptr) return m->process->Read(offset, out);
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
  if (m->process->Read(offset, std::span(out).subspan(at))) return true;
  out.resize(at);
  return false;
}

bool Iommu::Access::Write(uint64_t iova, std::span<const std::byte> in) const {
  uint64_t offset = 0;
  const Mapping* m = iommu_.FindLocked(iova, in.size(), &offset);
  if (m == nullptr) return false;
  if (m->host == nullptr) return m->process->Write(offset, in);
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
    // last byte sees the body (each pwrite stores through the kernel, then returns).
    return m->process->Write(offset, in.first(body)) &&
           m->process->Write(offset + body, in.subspan(body));
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
    if (!m->process->Read(offset, std::as_writable_bytes(std::span(&raw, 1)))) return std::nullopt;
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

bool Iommu::IsMappedFor(uint16_t uid, uint64_t iova, uint64_t len) const {
  const Access access(*this);
  return RunMappedForLocked(uid, iova, len);
}

}  // namespace onchip::sim
