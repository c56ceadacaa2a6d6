// Plain structs over device memory for the hot paths (posting WQEs, polling CQEs), and the check
// that ties each of them to its generated PRM descriptor.
//
// The generated layouts (uapi/prm/<area>.h) are the source of truth: names and bit offsets come
// from the PRM field table. Commands go through them (prm::Message, prm::Bits). The data path
// wants plain loads and stores instead, so uapi/prm/send_wqe.h, recv_wqe.h and cqe.h declare
// structs in namespace prm::pod with the same names, whose members are Be16/Be32/Be64
// (uapi/prm/endian.h) or bytes. Each struct is followed by ONCHIP_PRM_POD_MATCHES lines, one per
// member, which fail to compile unless the member's byte offset and size equal the descriptor's
// bit offset and width: a pod struct cannot drift from the table.
#pragma once

#include <cstddef>

namespace onchip::prm::pod {

// Bits a descriptor covers: a nested layout's size, an array's elements, a field's width.
template <class D>
constexpr std::size_t DescriptorBits(const D&) {
  if constexpr (requires { D::size_bits; })
    return D::size_bits;
  else if constexpr (requires { D::element_width; })
    return D::element_width * D::count;
  else
    return D::bit_width;
}

}  // namespace onchip::prm::pod

// static_assert that pod struct `Pod`'s member `member` sits where descriptor `desc` says.
#define ONCHIP_PRM_POD_MATCHES(Pod, member, desc)                                          \
  static_assert(offsetof(Pod, member) * 8 == (desc).bit_offset &&                          \
                    sizeof(static_cast<Pod*>(nullptr)->member) * 8 ==                      \
                        ::onchip::prm::pod::DescriptorBits(desc),                          \
                #Pod "." #member " is not where the PRM table puts " #desc)
