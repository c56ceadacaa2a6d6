// The firmware objects a user context creates, one row per kind: the command that creates it and
// where its output names the new object, the command that destroys it and where its input takes
// that name. A kind whose destruction needs one more field of the creation's input (MEMIC: the
// size; a general object: its type) names that field too. The device daemon keeps a client's
// objects and releases them from this table alone (tools/simd/owned_objects.h), as the kernel's
// uverbs file releases what a process leaves behind (mlx5_ib's devx_obj_cleanup builds each
// object's destroy command at creation time for the same reason).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/field.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/srq.h"
#include "uapi/prm/wq.h"
#include "uapi/prm/xrc.h"

namespace onchip::prm {

enum class ObjectKind : uint8_t {
  kUar, kPd, kTd, kMkey, kMemic, kSwIcm, kEq, kCq, kQp, kSrq, kTis, kSq, kRq, kTir, kXrcd, kXrcSrq
};

struct ObjectKindRow {
  ObjectKind kind;
  std::string_view name;
  Opcode create;
  FieldSpot created;      // in the creation's output: the object's number (or address)
  Opcode destroy;
  FieldSpot destroyed;    // in the destruction's input: the same number
  uint16_t destroy_bytes; // the destruction's input size
  FieldSpot carried_in;   // a field of the creation's input the destruction repeats (or none)
  FieldSpot carried_out;  // where the destruction takes it
};

// clang-format off
inline constexpr ObjectKindRow kObjectKinds[] = {
    {ObjectKind::kUar, "uar", ALLOC_UAR, SpotOf(alloc_uar_out::uar),
     DEALLOC_UAR, SpotOf(dealloc_uar_in::uar), size_bytes<dealloc_uar_in>, {}, {}},
    {ObjectKind::kPd, "pd", ALLOC_PD, SpotOf(alloc_pd_out::pd),
     DEALLOC_PD, SpotOf(dealloc_pd_in::pd), size_bytes<dealloc_pd_in>, {}, {}},
    {ObjectKind::kTd, "transport_domain", ALLOC_TRANSPORT_DOMAIN,
     SpotOf(alloc_transport_domain_out::transport_domain), DEALLOC_TRANSPORT_DOMAIN,
     SpotOf(dealloc_transport_domain_in::transport_domain), size_bytes<dealloc_transport_domain_in>,
     {}, {}},
    {ObjectKind::kMkey, "mkey", CREATE_MKEY, SpotOf(create_mkey_out::mkey_index),
     DESTROY_MKEY, SpotOf(destroy_mkey_in::mkey_index), size_bytes<destroy_mkey_in>, {}, {}},
    {ObjectKind::kMemic, "memic", ALLOC_MEMIC, SpotOf(alloc_memic_out::memic_start_addr),
     DEALLOC_MEMIC, SpotOf(dealloc_memic_in::memic_start_addr), size_bytes<dealloc_memic_in>,
     SpotOf(alloc_memic_in::memic_size), SpotOf(dealloc_memic_in::memic_size)},
    {ObjectKind::kSwIcm, "sw_icm", CREATE_GENERAL_OBJECT, SpotOf(general_obj_out_cmd_hdr::obj_id),
     DESTROY_GENERAL_OBJECT, SpotOf(general_obj_in_cmd_hdr::obj_id),
     size_bytes<general_obj_in_cmd_hdr>, SpotOf(general_obj_in_cmd_hdr::obj_type),
     SpotOf(general_obj_in_cmd_hdr::obj_type)},
    {ObjectKind::kEq, "eq", CREATE_EQ, SpotOf(create_eq_out::eq_number),
     DESTROY_EQ, SpotOf(destroy_eq_in::eq_number), size_bytes<destroy_eq_in>, {}, {}},
    {ObjectKind::kCq, "cq", CREATE_CQ, SpotOf(create_cq_out::cqn),
     DESTROY_CQ, SpotOf(destroy_cq_in::cqn), size_bytes<destroy_cq_in>, {}, {}},
    {ObjectKind::kQp, "qp", CREATE_QP, SpotOf(create_qp_out::qpn),
     DESTROY_QP, SpotOf(destroy_qp_in::qpn), size_bytes<destroy_qp_in>, {}, {}},
    {ObjectKind::kSrq, "srq", CREATE_SRQ, SpotOf(create_srq_out::srqn),
     DESTROY_SRQ, SpotOf(destroy_srq_in::srqn), size_bytes<destroy_srq_in>, {}, {}},
    {ObjectKind::kTis, "tis", CREATE_TIS, SpotOf(create_tis_out::tisn),
     DESTROY_TIS, SpotOf(destroy_tis_in::tisn), size_bytes<destroy_tis_in>, {}, {}},
    {ObjectKind::kSq, "sq", CREATE_SQ, SpotOf(create_sq_out::sqn),
     DESTROY_SQ, SpotOf(destroy_sq_in::sqn), size_bytes<destroy_sq_in>, {}, {}},
    {ObjectKind::kRq, "rq", CREATE_RQ, SpotOf(create_rq_out::rqn),
     DESTROY_RQ, SpotOf(destroy_rq_in::rqn), size_bytes<destroy_rq_in>, {}, {}},
    {ObjectKind::kTir, "tir", CREATE_TIR, SpotOf(create_tir_out::tirn),
     DESTROY_TIR, SpotOf(destroy_tir_in::tirn), size_bytes<destroy_tir_in>, {}, {}},
    {ObjectKind::kXrcd, "xrcd", ALLOC_XRCD, SpotOf(alloc_xrcd_out::xrcd),
     DEALLOC_XRCD, SpotOf(dealloc_xrcd_in::xrcd), size_bytes<dealloc_xrcd_in>, {}, {}},
    {ObjectKind::kXrcSrq, "xrc_srq", CREATE_XRC_SRQ, SpotOf(create_xrc_srq_out::xrc_srqn),
     DESTROY_XRC_SRQ, SpotOf(destroy_xrc_srq_in::xrc_srqn), size_bytes<destroy_xrc_srq_in>, {}, {}},
};
// clang-format on

inline constexpr std::size_t kObjectKindCount = std::size(kObjectKinds);

constexpr bool RowsInKindOrder() {
  for (std::size_t k = 0; k < kObjectKindCount; ++k)
    if (static_cast<std::size_t>(kObjectKinds[k].kind) != k) return false;
  return true;
}
static_assert(RowsInKindOrder(), "kObjectKinds lists the kinds in ObjectKind order");

// The row of `kind` (rows are in ObjectKind order).
constexpr const ObjectKindRow& RowOf(ObjectKind kind) {
  return kObjectKinds[static_cast<std::size_t>(kind)];
}

// The row whose creation (or destruction) `opcode` is, or nullptr.
constexpr const ObjectKindRow* CreatedBy(uint16_t opcode) {
  for (const ObjectKindRow& r : kObjectKinds)
    if (r.create == opcode) return &r;
  return nullptr;
}
constexpr const ObjectKindRow* DestroyedBy(uint16_t opcode) {
  for (const ObjectKindRow& r : kObjectKinds)
    if (r.destroy == opcode) return &r;
  return nullptr;
}

}  // namespace onchip::prm
