#include "uapi/uverbs/ioctl_cmd.h"

#include <cerrno>
#include <cstring>
#include <limits>

namespace onchip::uverbs {
namespace {

constexpr std::size_t kHdrBytes = sizeof(ib_uverbs_ioctl_hdr);
constexpr std::size_t kAttrBytes = sizeof(ib_uverbs_attr);
static_assert(kHdrBytes % 8 == 0 && kAttrBytes % 8 == 0, "the ABI keeps attrs 8-byte aligned");
constexpr std::size_t kInlineMax = sizeof(ib_uverbs_attr::data);

uint64_t PointerBits(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

IoctlCommand::IoctlCommand(uint16_t object_id, uint16_t method_id, uint32_t driver_id)
    : object_id_(object_id), method_id_(method_id), driver_id_(driver_id) {}

void IoctlCommand::Refuse(const char* what) {
  if (refused_ == nullptr) refused_ = what;
}

ib_uverbs_attr& IoctlCommand::Add(uint16_t attr_id) {
  buffer_.clear();  // any earlier encoding is stale
  for (const ib_uverbs_attr& a : attrs_)
    if (a.attr_id == attr_id) Refuse("uverbs ioctl: attribute id given twice");
  ib_uverbs_attr& a = attrs_.emplace_back();
  a.attr_id = attr_id;
  a.flags = UVERBS_ATTR_F_MANDATORY;  // rdma-core's default; Optional() clears it
  return a;
}

IoctlCommand& IoctlCommand::PtrIn(uint16_t attr_id, std::span<const std::byte> data) {
  ib_uverbs_attr& a = Add(attr_id);
  if (data.size() > std::numeric_limits<decltype(a.len)>::max()) {
    Refuse("uverbs ioctl: attribute longer than 65535 bytes");
    return *this;
  }
  a.len = static_cast<uint16_t>(data.size());
  if (data.size() <= kInlineMax) {
    if (!data.empty()) std::memcpy(&a.data, data.data(), data.size());
  } else {
    a.data = PointerBits(data.data());
  }
  return *this;
}

IoctlCommand& IoctlCommand::ConstIn(uint16_t attr_id, uint64_t value) {
  return In(attr_id, value);
}

IoctlCommand& IoctlCommand::PtrOut(uint16_t attr_id, std::span<std::byte> buffer) {
  ib_uverbs_attr& a = Add(attr_id);
  if (buffer.size() > std::numeric_limits<decltype(a.len)>::max()) {
    Refuse("uverbs ioctl: attribute longer than 65535 bytes");
    return *this;
  }
  a.len = static_cast<uint16_t>(buffer.size());
  a.data = PointerBits(buffer.data());
  return *this;
}

IoctlCommand& IoctlCommand::ObjIn(uint16_t attr_id, uint32_t handle) {
  Add(attr_id).data = handle;
  return *this;
}

IoctlCommand& IoctlCommand::ObjNew(uint16_t attr_id) { return ObjIn(attr_id, 0); }

IoctlCommand& IoctlCommand::FdIn(uint16_t attr_id, int fd) {
  Add(attr_id).data_s64 = fd;
  return *this;
}

IoctlCommand& IoctlCommand::EnumIn(uint16_t attr_id, uint8_t elem_id,
                                   std::span<const std::byte> data) {
  PtrIn(attr_id, data);
  attrs_.back().attr_data.enum_data.elem_id = elem_id;
  return *this;
}

IoctlCommand& IoctlCommand::Optional() {
  if (attrs_.empty()) {
    Refuse("uverbs ioctl: Optional() before any attribute");
    return *this;
  }
  buffer_.clear();
  attrs_.back().flags &= ~uint16_t{UVERBS_ATTR_F_MANDATORY};
  return *this;
}

Result<std::span<std::byte>> IoctlCommand::Encode() {
  if (refused_ != nullptr) return Fail(EINVAL, refused_);
  const std::size_t length = kHdrBytes + attrs_.size() * kAttrBytes;
  if (length > std::numeric_limits<decltype(ib_uverbs_ioctl_hdr::length)>::max())
    return Fail(EINVAL, "uverbs ioctl: command longer than hdr.length can say");
  ib_uverbs_ioctl_hdr hdr{};
  hdr.length = static_cast<uint16_t>(length);
  hdr.object_id = object_id_;
  hdr.method_id = method_id_;
  hdr.num_attrs = static_cast<uint16_t>(attrs_.size());
  hdr.driver_id = driver_id_;
  buffer_.assign(length / sizeof(uint64_t), 0);
  auto* bytes = reinterpret_cast<std::byte*>(buffer_.data());
  std::memcpy(bytes, &hdr, kHdrBytes);
  if (!attrs_.empty()) std::memcpy(bytes + kHdrBytes, attrs_.data(), attrs_.size() * kAttrBytes);
  return std::span<std::byte>(bytes, length);
}

Result<ib_uverbs_attr> IoctlCommand::Encoded(uint16_t attr_id) const {
  if (buffer_.empty()) return Fail(EINVAL, "uverbs ioctl: command not encoded");
  const auto* bytes = reinterpret_cast<const std::byte*>(buffer_.data());
  for (std::size_t i = 0; i < attrs_.size(); ++i) {
    if (attrs_[i].attr_id != attr_id) continue;
    ib_uverbs_attr a;
    std::memcpy(&a, bytes + kHdrBytes + i * kAttrBytes, kAttrBytes);
    return a;
  }
  return Fail(ENOENT, "uverbs ioctl: no such attribute in the command");
}

Result<uint32_t> IoctlCommand::Handle(uint16_t attr_id) const {
  ONCHIP_TRY(const ib_uverbs_attr a, Encoded(attr_id));
  return static_cast<uint32_t>(a.data);
}

Result<bool> IoctlCommand::OutputValid(uint16_t attr_id) const {
  ONCHIP_TRY(const ib_uverbs_attr a, Encoded(attr_id));
  return (a.flags & UVERBS_ATTR_F_VALID_OUTPUT) != 0;
}

}  // namespace onchip::uverbs
