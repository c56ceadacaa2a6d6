#include "tools/simd/owned_objects.h"

#include <algorithm>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/commands.h"
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

namespace onchip::simd {

const char* OwnedKindName(OwnedKind kind) {
  switch (kind) {
    case OwnedKind::kUar: return "uar";
    case OwnedKind::kPd: return "pd";
    case OwnedKind::kTd: return "transport_domain";
    case OwnedKind::kMkey: return "mkey";
    case OwnedKind::kMemic: return "memic";
    case OwnedKind::kSwIcm: return "sw_icm";
    case OwnedKind::kEq: return "eq";
    case OwnedKind::kCq: return "cq";
    case OwnedKind::kQp: return "qp";
    case OwnedKind::kSrq: return "srq";
    case OwnedKind::kTis: return "tis";
    case OwnedKind::kSq: return "sq";
    case OwnedKind::kRq: return "rq";
    case OwnedKind::kTir: return "tir";
    case OwnedKind::kXrcd: return "xrcd";
    case OwnedKind::kXrcSrq: return "xrc_srq";
  }
  return "unknown";
}

bool CarriesUid(uint16_t opcode) {
  const prm::Command* c = prm::FindCommand(opcode);
  return c != nullptr && c->uid;
}

bool UserMayIssue(uint16_t opcode) {
  const prm::Command* c = prm::FindCommand(opcode);
  return c != nullptr && c->user;
}

namespace {

uint16_t OpcodeOf(std::span<const std::byte> in) {
  return static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode));
}

template <class L>
std::vector<std::byte> Bytes(const prm::Message<L>& m) {
  return {m.bytes().begin(), m.bytes().end()};
}

}  // namespace

const char* OwnedObjects::Refusal(std::span<const std::byte> in) const {
  if (OpcodeOf(in) != prm::DEALLOC_MEMIC) return nullptr;
  if (in.size() < prm::size_bytes<prm::dealloc_memic_in>) return nullptr;  // firmware refuses it
  const uint64_t addr = prm::Get(in, prm::dealloc_memic_in::memic_start_addr);
  const bool own = std::any_of(objects_.begin(), objects_.end(), [&](const Object& o) {
    return o.kind == OwnedKind::kMemic && o.addr == addr;
  });
  return own ? nullptr : "DEALLOC_MEMIC of device memory this client did not allocate";
}

void OwnedObjects::Forget(OwnedKind kind, uint64_t id_or_addr) {
  for (auto it = objects_.begin(); it != objects_.end(); ++it) {
    const uint64_t key = kind == OwnedKind::kMemic ? it->addr : it->id;
    if (it->kind == kind && key == id_or_addr) {
      objects_.erase(it);
      return;
    }
  }
}

void OwnedObjects::Note(std::span<const std::byte> in, std::span<const std::byte> out) {
  if (in.size() < 16 || out.size() < 16) return;
  auto add = [&](OwnedKind kind, uint32_t id) { objects_.push_back(Object{kind, id, 0, 0, 0}); };
  switch (OpcodeOf(in)) {
    case prm::ALLOC_UAR: add(OwnedKind::kUar, prm::Get(out, prm::alloc_uar_out::uar)); break;
    case prm::DEALLOC_UAR: Forget(OwnedKind::kUar, prm::Get(in, prm::dealloc_uar_in::uar)); break;
    case prm::ALLOC_PD: add(OwnedKind::kPd, prm::Get(out, prm::alloc_pd_out::pd)); break;
    case prm::DEALLOC_PD: Forget(OwnedKind::kPd, prm::Get(in, prm::dealloc_pd_in::pd)); break;
    case prm::ALLOC_TRANSPORT_DOMAIN:
      add(OwnedKind::kTd, prm::Get(out, prm::alloc_transport_domain_out::transport_domain));
      break;
    case prm::DEALLOC_TRANSPORT_DOMAIN:
      Forget(OwnedKind::kTd, prm::Get(in, prm::dealloc_transport_domain_in::transport_domain));
      break;
    case prm::CREATE_MKEY: add(OwnedKind::kMkey, prm::Get(out, prm::create_mkey_out::mkey_index)); break;
    case prm::DESTROY_MKEY: Forget(OwnedKind::kMkey, prm::Get(in, prm::destroy_mkey_in::mkey_index)); break;
    case prm::CREATE_EQ: add(OwnedKind::kEq, prm::Get(out, prm::create_eq_out::eq_number)); break;
    case prm::DESTROY_EQ: Forget(OwnedKind::kEq, prm::Get(in, prm::destroy_eq_in::eq_number)); break;
    case prm::CREATE_CQ: add(OwnedKind::kCq, prm::Get(out, prm::create_cq_out::cqn)); break;
    case prm::DESTROY_CQ: Forget(OwnedKind::kCq, prm::Get(in, prm::destroy_cq_in::cqn)); break;
    case prm::CREATE_QP: add(OwnedKind::kQp, prm::Get(out, prm::create_qp_out::qpn)); break;
    case prm::DESTROY_QP: Forget(OwnedKind::kQp, prm::Get(in, prm::destroy_qp_in::qpn)); break;
    case prm::CREATE_SRQ: add(OwnedKind::kSrq, prm::Get(out, prm::create_srq_out::srqn)); break;
    case prm::DESTROY_SRQ: Forget(OwnedKind::kSrq, prm::Get(in, prm::destroy_srq_in::srqn)); break;
    case prm::ALLOC_XRCD: add(OwnedKind::kXrcd, prm::Get(out, prm::alloc_xrcd_out::xrcd)); break;
    case prm::DEALLOC_XRCD: Forget(OwnedKind::kXrcd, prm::Get(in, prm::dealloc_xrcd_in::xrcd)); break;
    case prm::CREATE_XRC_SRQ:
      add(OwnedKind::kXrcSrq, prm::Get(out, prm::create_xrc_srq_out::xrc_srqn));
      break;
    case prm::DESTROY_XRC_SRQ:
      Forget(OwnedKind::kXrcSrq, prm::Get(in, prm::destroy_xrc_srq_in::xrc_srqn));
      break;
    case prm::CREATE_TIS: add(OwnedKind::kTis, prm::Get(out, prm::create_tis_out::tisn)); break;
    case prm::DESTROY_TIS: Forget(OwnedKind::kTis, prm::Get(in, prm::destroy_tis_in::tisn)); break;
    case prm::CREATE_SQ: add(OwnedKind::kSq, prm::Get(out, prm::create_sq_out::sqn)); break;
    case prm::DESTROY_SQ: Forget(OwnedKind::kSq, prm::Get(in, prm::destroy_sq_in::sqn)); break;
    case prm::CREATE_RQ: add(OwnedKind::kRq, prm::Get(out, prm::create_rq_out::rqn)); break;
    case prm::DESTROY_RQ: Forget(OwnedKind::kRq, prm::Get(in, prm::destroy_rq_in::rqn)); break;
    case prm::CREATE_TIR: add(OwnedKind::kTir, prm::Get(out, prm::create_tir_out::tirn)); break;
    case prm::DESTROY_TIR: Forget(OwnedKind::kTir, prm::Get(in, prm::destroy_tir_in::tirn)); break;
    case prm::CREATE_GENERAL_OBJECT:
      objects_.push_back(Object{OwnedKind::kSwIcm,
                                prm::Get(out, prm::general_obj_out_cmd_hdr::obj_id),
                                static_cast<uint16_t>(prm::Get(in, prm::general_obj_in_cmd_hdr::obj_type)),
                                0, 0});
      break;
    case prm::DESTROY_GENERAL_OBJECT:
      Forget(OwnedKind::kSwIcm, prm::Get(in, prm::general_obj_in_cmd_hdr::obj_id));
      break;
    case prm::ALLOC_MEMIC:
      if (in.size() >= prm::size_bytes<prm::alloc_memic_in>)
        objects_.push_back(Object{OwnedKind::kMemic, 0, 0,
                                  prm::Get(out, prm::alloc_memic_out::memic_start_addr),
                                  prm::Get(in, prm::alloc_memic_in::memic_size)});
      break;
    case prm::DEALLOC_MEMIC:
      Forget(OwnedKind::kMemic, prm::Get(in, prm::dealloc_memic_in::memic_start_addr));
      break;
    default:
      break;
  }
}

std::vector<std::vector<std::byte>> OwnedObjects::ReleaseCommands() const {
  std::vector<std::vector<std::byte>> cmds;
  for (const Object& o : objects_) {
    if (o.kind != OwnedKind::kQp) continue;
    prm::Message<prm::qp_2err_in> in;
    in.set(prm::qp_2err_in::opcode, prm::QP_2ERR).set(prm::qp_2err_in::qpn, o.id);
    cmds.push_back(Bytes(in));
  }
  for (auto it = objects_.rbegin(); it != objects_.rend(); ++it) {
    const Object& o = *it;
    switch (o.kind) {
      case OwnedKind::kUar: {
        prm::Message<prm::dealloc_uar_in> in;
        in.set(prm::dealloc_uar_in::opcode, prm::DEALLOC_UAR).set(prm::dealloc_uar_in::uar, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kPd: {
        prm::Message<prm::dealloc_pd_in> in;
        in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kTd: {
        prm::Message<prm::dealloc_transport_domain_in> in;
        in.set(prm::dealloc_transport_domain_in::opcode, prm::DEALLOC_TRANSPORT_DOMAIN)
            .set(prm::dealloc_transport_domain_in::transport_domain, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kMkey: {
        prm::Message<prm::destroy_mkey_in> in;
        in.set(prm::destroy_mkey_in::opcode, prm::DESTROY_MKEY)
            .set(prm::destroy_mkey_in::mkey_index, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kMemic: {
        prm::Message<prm::dealloc_memic_in> in;
        in.set(prm::dealloc_memic_in::opcode, prm::DEALLOC_MEMIC)
            .set(prm::dealloc_memic_in::memic_start_addr, o.addr)
            .set(prm::dealloc_memic_in::memic_size, o.size);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kSwIcm: {
        prm::Message<prm::general_obj_in_cmd_hdr> in;
        in.set(prm::general_obj_in_cmd_hdr::opcode, prm::DESTROY_GENERAL_OBJECT)
            .set(prm::general_obj_in_cmd_hdr::obj_type, o.obj_type)
            .set(prm::general_obj_in_cmd_hdr::obj_id, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kEq: {
        prm::Message<prm::destroy_eq_in> in;
        in.set(prm::destroy_eq_in::opcode, prm::DESTROY_EQ).set(prm::destroy_eq_in::eq_number, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kCq: {
        prm::Message<prm::destroy_cq_in> in;
        in.set(prm::destroy_cq_in::opcode, prm::DESTROY_CQ).set(prm::destroy_cq_in::cqn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kQp: {
        prm::Message<prm::destroy_qp_in> in;
        in.set(prm::destroy_qp_in::opcode, prm::DESTROY_QP).set(prm::destroy_qp_in::qpn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kSrq: {
        prm::Message<prm::destroy_srq_in> in;
        in.set(prm::destroy_srq_in::opcode, prm::DESTROY_SRQ).set(prm::destroy_srq_in::srqn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kTis: {
        prm::Message<prm::destroy_tis_in> in;
        in.set(prm::destroy_tis_in::opcode, prm::DESTROY_TIS).set(prm::destroy_tis_in::tisn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kSq: {
        prm::Message<prm::destroy_sq_in> in;
        in.set(prm::destroy_sq_in::opcode, prm::DESTROY_SQ).set(prm::destroy_sq_in::sqn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kRq: {
        prm::Message<prm::destroy_rq_in> in;
        in.set(prm::destroy_rq_in::opcode, prm::DESTROY_RQ).set(prm::destroy_rq_in::rqn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kTir: {
        prm::Message<prm::destroy_tir_in> in;
        in.set(prm::destroy_tir_in::opcode, prm::DESTROY_TIR).set(prm::destroy_tir_in::tirn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kXrcd: {
        prm::Message<prm::dealloc_xrcd_in> in;
        in.set(prm::dealloc_xrcd_in::opcode, prm::DEALLOC_XRCD).set(prm::dealloc_xrcd_in::xrcd, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
      case OwnedKind::kXrcSrq: {
        prm::Message<prm::destroy_xrc_srq_in> in;
        in.set(prm::destroy_xrc_srq_in::opcode, prm::DESTROY_XRC_SRQ)
            .set(prm::destroy_xrc_srq_in::xrc_srqn, o.id);
        cmds.push_back(Bytes(in));
        break;
      }
    }
  }
  return cmds;
}

std::array<uint32_t, kOwnedKinds> OwnedObjects::counts() const {
  std::array<uint32_t, kOwnedKinds> n{};
  for (const Object& o : objects_) ++n[static_cast<std::size_t>(o.kind)];
  return n;
}

bool OwnedObjects::Owns(OwnedKind kind, uint32_t id) const {
  return std::any_of(objects_.begin(), objects_.end(),
                     [&](const Object& o) { return o.kind == kind && o.id == id; });
}

uint64_t OwnedObjects::memic_bytes() const {
  uint64_t n = 0;
  for (const Object& o : objects_)
    if (o.kind == OwnedKind::kMemic) n += o.size;
  return n;
}

}  // namespace onchip::simd
