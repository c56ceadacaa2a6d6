// The kernel uverbs ioctl ABI: one RDMA_VERBS_IOCTL call carries an ib_uverbs_ioctl_hdr
// followed by an array of ib_uverbs_attr, all in one contiguous buffer.
//
// IoctlCommand builds that buffer the way rdma-core's cmd_ioctl.h does, with the object, method
// and attribute ids from the system's <rdma/*_ioctl_cmds.h> (never renumbered here):
//
//   IoctlCommand cmd(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
//   cmd.PtrIn(MLX5_IB_ATTR_DEVX_OTHER_CMD_IN, in.bytes())
//      .PtrOut(MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT, out.bytes());
//   ONCHIP_TRY(std::span<std::byte> buf, cmd.Encode());
//   ioctl(cmd_fd, RDMA_VERBS_IOCTL, buf.data());          // the later kernel (devx) path
//
// Encoding rules (the kernel's uverbs_ioctl.c reads them so):
//   - hdr.length = sizeof(hdr) + num_attrs * sizeof(attr); reserved fields zero; driver_id is
//     the provider's (RDMA_DRIVER_MLX5), needed for the driver-namespace ids (bit 12 set);
//   - every attribute is UVERBS_ATTR_F_MANDATORY unless Optional() follows it: the kernel then
//     fails the call with EPROTONOSUPPORT if it does not know the attribute, instead of ignoring;
//   - ptr-in data of at most 8 bytes travels inline in attr.data, longer data by pointer; ptr-out
//     is always a pointer (the kernel writes there and sets UVERBS_ATTR_F_VALID_OUTPUT);
//   - constants are u64 inline, object handles (idr) and fds go in attr.data with len 0.
// Pointers are not copied: the buffers given to PtrIn/PtrOut must outlive the ioctl.
//
// Refusals are sticky (as prm::Message's are): an attribute id given twice (the kernel answers
// EINVAL), a length over 65535, or a command over hdr.length's 16 bits make Encode() fail with
// EINVAL and name the first problem.
#pragma once

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "uapi/result.h"

namespace onchip::uverbs {

class IoctlCommand {
 public:
  IoctlCommand(uint16_t object_id, uint16_t method_id, uint32_t driver_id = RDMA_DRIVER_MLX5);

  // Input bytes: inline when at most 8 bytes, else by pointer.
  IoctlCommand& PtrIn(uint16_t attr_id, std::span<const std::byte> data);
  // An input value as its bytes (fill_attr_in_uint32 / _uint64): `In(id, uint32_t{64})`.
  template <class T>
    requires std::is_trivially_copyable_v<T> && (sizeof(T) <= 8)
  IoctlCommand& In(uint16_t attr_id, const T& value) {
    return PtrIn(attr_id, std::as_bytes(std::span<const T, 1>(&value, 1)));
  }
  // A UVERBS_ATTR_CONST_IN value: u64 inline.
  IoctlCommand& ConstIn(uint16_t attr_id, uint64_t value);
  // Output buffer the kernel fills (always by pointer).
  IoctlCommand& PtrOut(uint16_t attr_id, std::span<std::byte> buffer);
  // An existing object's handle (UVERBS_ATTR_IDR in) / the handle of the object the call
  // creates (UVERBS_ATTR_IDR new: the kernel writes it back into attr.data, read with Handle()).
  IoctlCommand& ObjIn(uint16_t attr_id, uint32_t handle);
  IoctlCommand& ObjNew(uint16_t attr_id);
  IoctlCommand& FdIn(uint16_t attr_id, int fd);
  // A UVERBS_ATTR_ENUM_IN: which variant (elem_id) and its data.
  IoctlCommand& EnumIn(uint16_t attr_id, uint8_t elem_id, std::span<const std::byte> data);
  // Clears UVERBS_ATTR_F_MANDATORY on the attribute added last.
  IoctlCommand& Optional();

  // The contiguous hdr + attrs buffer, 8-byte aligned, to pass to RDMA_VERBS_IOCTL. The kernel
  // writes into it (output flags, new handles), so it stays owned by this command; another
  // attribute added afterwards invalidates it.
  Result<std::span<std::byte>> Encode();

  // After the ioctl, from the encoded buffer: the handle the kernel returned for an ObjNew
  // attribute, and whether it filled an output (UVERBS_ATTR_F_VALID_OUTPUT). ENOENT if the
  // attribute is not in the command, EINVAL before Encode().
  Result<uint32_t> Handle(uint16_t attr_id) const;
  Result<bool> OutputValid(uint16_t attr_id) const;

  std::size_t num_attrs() const { return attrs_.size(); }

 private:
  ib_uverbs_attr& Add(uint16_t attr_id);
  void Refuse(const char* what);
  // The attribute as the kernel left it in the encoded buffer.
  Result<ib_uverbs_attr> Encoded(uint16_t attr_id) const;

  uint16_t object_id_;
  uint16_t method_id_;
  uint32_t driver_id_;
  std::vector<ib_uverbs_attr> attrs_;
  std::vector<uint64_t> buffer_;  // hdr + attrs once encoded; uint64_t for alignment
  const char* refused_ = nullptr;
};

}  // namespace onchip::uverbs
