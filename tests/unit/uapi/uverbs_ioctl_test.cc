// The uverbs ioctl encoding, byte for byte as the kernel's uverbs_ioctl.c reads it. Nothing here
// calls the ioctl.
#include "uapi/uverbs/ioctl_cmd.h"

#include <gtest/gtest.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace onchip::uverbs {
namespace {

// The header's fixed part (the kernel struct ends in a flexible array, so it cannot be a member).
struct Header {
  uint16_t length, object_id, method_id, num_attrs;
  uint64_t reserved1;
  uint32_t driver_id, reserved2;
};
static_assert(sizeof(Header) == sizeof(ib_uverbs_ioctl_hdr));
static_assert(offsetof(Header, driver_id) == offsetof(ib_uverbs_ioctl_hdr, driver_id));
static_assert(offsetof(Header, num_attrs) == offsetof(ib_uverbs_ioctl_hdr, num_attrs));

struct Decoded {
  Header hdr;
  std::vector<ib_uverbs_attr> attrs;
};

// Reads the buffer back through the kernel's struct definitions.
Decoded Decode(std::span<const std::byte> buf) {
  Decoded d{};
  EXPECT_GE(buf.size(), sizeof(ib_uverbs_ioctl_hdr));
  std::memcpy(&d.hdr, buf.data(), sizeof d.hdr);
  d.attrs.resize(d.hdr.num_attrs);
  EXPECT_EQ(buf.size(), sizeof d.hdr + d.attrs.size() * sizeof(ib_uverbs_attr));
  if (!d.attrs.empty())
    std::memcpy(d.attrs.data(), buf.data() + sizeof d.hdr, d.attrs.size() * sizeof(ib_uverbs_attr));
  return d;
}

uint64_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(UverbsIoctl, HeaderIsTheKernelsLayout) {
  // The kernel ABI: 24-byte header, 16-byte attributes, both 8-byte aligned.
  static_assert(sizeof(ib_uverbs_ioctl_hdr) == 24);
  static_assert(sizeof(ib_uverbs_attr) == 16);
  // The request number the kernel's uverbs ioctl answers, worked out from the ABI rather than
  // with the macro that defines it: _IOC(read|write = 3 in bits 31:30, size 24 in bits 29:16,
  // type 0x1b (RDMA_IOCTL_MAGIC) in bits 15:8, number 1 in bits 7:0).
  constexpr unsigned long kVerbsIoctl = (3ul << 30) | (24ul << 16) | (0x1bul << 8) | 1ul;
  static_assert(kVerbsIoctl == 0xc0181b01ul);
  EXPECT_EQ(RDMA_IOCTL_MAGIC, 0x1b);
  EXPECT_EQ(static_cast<unsigned long>(RDMA_VERBS_IOCTL), kVerbsIoctl);
}

TEST(UverbsIoctl, DevxOtherCarriesCommandInAndOutByPointer) {
  std::array<std::byte, 16> in{};  // e.g. query_hca_cap_in
  std::vector<std::byte> out(4112);
  IoctlCommand cmd(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  cmd.PtrIn(MLX5_IB_ATTR_DEVX_OTHER_CMD_IN, in).PtrOut(MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT, out);
  auto buf = cmd.Encode();
  ASSERT_TRUE(buf.has_value()) << buf.error().what();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % 8, 0u);

  const Decoded d = Decode(*buf);
  EXPECT_EQ(d.hdr.length, 24 + 2 * 16);
  EXPECT_EQ(d.hdr.object_id, MLX5_IB_OBJECT_DEVX);
  EXPECT_EQ(d.hdr.object_id, 0x1000);  // driver namespace: UVERBS_ID_NS bit 12
  EXPECT_EQ(d.hdr.method_id, MLX5_IB_METHOD_DEVX_OTHER);
  EXPECT_EQ(d.hdr.num_attrs, 2);
  EXPECT_EQ(d.hdr.driver_id, RDMA_DRIVER_MLX5);
  EXPECT_EQ(d.hdr.reserved1, 0u);
  EXPECT_EQ(d.hdr.reserved2, 0u);

  EXPECT_EQ(d.attrs[0].attr_id, MLX5_IB_ATTR_DEVX_OTHER_CMD_IN);
  EXPECT_EQ(d.attrs[0].len, 16);
  EXPECT_EQ(d.attrs[0].flags, UVERBS_ATTR_F_MANDATORY);
  EXPECT_EQ(d.attrs[0].data, Addr(in.data()));  // 16 > 8 bytes: by pointer
  EXPECT_EQ(d.attrs[0].attr_data.reserved, 0);

  EXPECT_EQ(d.attrs[1].attr_id, MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT);
  EXPECT_EQ(d.attrs[1].len, 4112);
  EXPECT_EQ(d.attrs[1].flags, UVERBS_ATTR_F_MANDATORY);
  EXPECT_EQ(d.attrs[1].data, Addr(out.data()));
}

TEST(UverbsIoctl, DmAllocWithMlx5DriverAttributes) {
  uint64_t start_offset = 0;
  uint16_t page_index = 0;
  IoctlCommand cmd(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC);
  cmd.ObjNew(UVERBS_ATTR_ALLOC_DM_HANDLE)
      .In(UVERBS_ATTR_ALLOC_DM_LENGTH, uint64_t{0x10000})
      .In(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, uint32_t{12})
      .PtrOut(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET,
              std::as_writable_bytes(std::span(&start_offset, 1)))
      .PtrOut(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX,
              std::as_writable_bytes(std::span(&page_index, 1)))
      .ConstIn(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, MLX5_IB_UAPI_DM_TYPE_MEMIC)
      .Optional();
  auto buf = cmd.Encode();
  ASSERT_TRUE(buf.has_value());
  const Decoded d = Decode(*buf);
  EXPECT_EQ(d.hdr.length, 24 + 6 * 16);
  EXPECT_EQ(d.hdr.object_id, UVERBS_OBJECT_DM);
  EXPECT_EQ(d.hdr.method_id, UVERBS_METHOD_DM_ALLOC);
  EXPECT_EQ(d.hdr.num_attrs, 6);

  // New object handle: len 0, data 0 until the kernel writes the handle.
  EXPECT_EQ(d.attrs[0].attr_id, UVERBS_ATTR_ALLOC_DM_HANDLE);
  EXPECT_EQ(d.attrs[0].len, 0);
  EXPECT_EQ(d.attrs[0].data, 0u);
  // <= 8 bytes: the value itself, inline, in its native byte order.
  EXPECT_EQ(d.attrs[1].attr_id, UVERBS_ATTR_ALLOC_DM_LENGTH);
  EXPECT_EQ(d.attrs[1].len, 8);
  EXPECT_EQ(d.attrs[1].data, 0x10000u);
  EXPECT_EQ(d.attrs[2].attr_id, UVERBS_ATTR_ALLOC_DM_ALIGNMENT);
  EXPECT_EQ(d.attrs[2].len, 4);
  uint32_t alignment;
  std::memcpy(&alignment, &d.attrs[2].data, 4);
  EXPECT_EQ(alignment, 12u);
  // Outputs go by pointer even when small.
  EXPECT_EQ(d.attrs[3].attr_id, MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET);
  EXPECT_EQ(d.attrs[3].len, 8);
  EXPECT_EQ(d.attrs[3].data, Addr(&start_offset));
  EXPECT_EQ(d.attrs[4].attr_id, MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX);
  EXPECT_EQ(d.attrs[4].len, 2);
  EXPECT_EQ(d.attrs[4].data, Addr(&page_index));
  EXPECT_EQ(d.attrs[5].attr_id, MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE);
  EXPECT_EQ(d.attrs[5].len, 8);
  EXPECT_EQ(d.attrs[5].data, uint64_t{MLX5_IB_UAPI_DM_TYPE_MEMIC});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.attrs[i].flags, UVERBS_ATTR_F_MANDATORY) << i;
  EXPECT_EQ(d.attrs[5].flags, 0) << "Optional() clears only the last attribute's flag";
}

TEST(UverbsIoctl, InlineUpToEightBytesThenPointer) {
  std::array<std::byte, 9> data;
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(0xa0 + i);
  IoctlCommand cmd(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  cmd.PtrIn(1, std::span(data).first(8)).PtrIn(2, data).PtrIn(3, {}).EnumIn(4, 3, std::span(data).first(1));
  auto buf = cmd.Encode();
  ASSERT_TRUE(buf.has_value());
  const Decoded d = Decode(*buf);
  EXPECT_EQ(d.attrs[0].len, 8);
  EXPECT_EQ(std::memcmp(&d.attrs[0].data, data.data(), 8), 0);
  EXPECT_EQ(d.attrs[1].len, 9);
  EXPECT_EQ(d.attrs[1].data, Addr(data.data()));
  EXPECT_EQ(d.attrs[2].len, 0);
  EXPECT_EQ(d.attrs[2].data, 0u);
  EXPECT_EQ(d.attrs[3].attr_data.enum_data.elem_id, 3);
  EXPECT_EQ(d.attrs[3].len, 1);
  EXPECT_EQ(d.attrs[3].data, 0xa0u);
}

TEST(UverbsIoctl, HandleAndOutputFlagReadBackWhatTheKernelWrote) {
  IoctlCommand cmd(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC);
  uint64_t out = 0;
  cmd.ObjNew(UVERBS_ATTR_ALLOC_DM_HANDLE)
      .PtrOut(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, std::as_writable_bytes(std::span(&out, 1)));
  EXPECT_EQ(cmd.Handle(UVERBS_ATTR_ALLOC_DM_HANDLE).error().errno_value(), EINVAL);  // not encoded
  auto buf = cmd.Encode();
  ASSERT_TRUE(buf.has_value());
  // Play the kernel: write the new handle and mark the output valid.
  ib_uverbs_attr a;
  std::memcpy(&a, buf->data() + 24, 16);
  a.data = 77;
  std::memcpy(buf->data() + 24, &a, 16);
  std::memcpy(&a, buf->data() + 40, 16);
  a.flags |= UVERBS_ATTR_F_VALID_OUTPUT;
  std::memcpy(buf->data() + 40, &a, 16);
  EXPECT_EQ(cmd.Handle(UVERBS_ATTR_ALLOC_DM_HANDLE).value(), 77u);
  EXPECT_TRUE(cmd.OutputValid(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET).value());
  EXPECT_FALSE(cmd.OutputValid(UVERBS_ATTR_ALLOC_DM_HANDLE).value());
  EXPECT_EQ(cmd.Handle(UVERBS_ATTR_ALLOC_DM_ALIGNMENT).error().errno_value(), ENOENT);
}

TEST(UverbsIoctl, RefusalsAreStickyAndNamed) {
  std::vector<std::byte> big(65536);
  IoctlCommand dup(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  dup.ConstIn(1, 1).ConstIn(1, 2).ConstIn(2, 3);
  auto r = dup.Encode();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().errno_value(), EINVAL);
  EXPECT_STREQ(r.error().what(), "uverbs ioctl: attribute id given twice");

  IoctlCommand longer(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  longer.PtrIn(1, big);
  EXPECT_EQ(longer.Encode().error().errno_value(), EINVAL);
  IoctlCommand longer_out(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  longer_out.PtrOut(1, big);
  EXPECT_EQ(longer_out.Encode().error().errno_value(), EINVAL);

  IoctlCommand many(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  for (uint16_t id = 0; id < (65535 - 24) / 16 + 1; ++id) many.ConstIn(id, id);
  EXPECT_EQ(many.Encode().error().errno_value(), EINVAL);

  IoctlCommand early(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER);
  early.Optional();
  EXPECT_EQ(early.Encode().error().errno_value(), EINVAL);
}

TEST(UverbsIoctl, EmptyCommandIsJustTheHeader) {
  IoctlCommand cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES, RDMA_DRIVER_UNKNOWN);
  auto buf = cmd.Encode();
  ASSERT_TRUE(buf.has_value());
  const Decoded d = Decode(*buf);
  EXPECT_EQ(d.hdr.length, 24);
  EXPECT_EQ(d.hdr.num_attrs, 0);
  EXPECT_EQ(d.hdr.driver_id, RDMA_DRIVER_UNKNOWN);
}

}  // namespace
}  // namespace onchip::uverbs
