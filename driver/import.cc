#include "driver/import.h"

#include <cerrno>

#include "driver/registry.h"

namespace onchip::driver {
namespace {

// The published object of kind K with `handle` that a context of `into`'s file created.
template <ObjectKind K>
typename KindTraits<K>::Object* FindOfFile(Registry& registry, const ibv_context* into,
                                           uint32_t handle) {
  return registry.FindIf<K>([&](const auto* o) {
    return o->ibv.handle == handle && Device::SameFile(o->ibv.context, into);
  });
}

// A face's release: its original (and, for an MR, the PD it was imported into) is free again.
Result<void> ReleasePdFace(Pd& face, Release) {
  face.protection_domain->life.Unpin();
  return {};
}

Result<void> ReleaseMrFace(Mr& face, Release) {
  face.imported_from->life.Unpin();
  face.pd->life.Unpin();
  return {};
}

Result<void> ReleaseDmFace(Dm& face, Release) {
  face.imported_from->life.Unpin();
  return {};
}

}  // namespace

Result<Pd*> ImportPd(const std::shared_ptr<Device>& device, ibv_context* into, uint32_t pd_handle) {
  if (!device || into == nullptr) return Fail(EINVAL, "import_pd: no device");
  ONCHIP_TRY(auto op, device->registry().Begin("import_pd: device closed"));
  Pd* original = FindOfFile<ObjectKind::kPd>(device->registry(), into, pd_handle);
  if (original == nullptr) return Fail(ENOENT, "import_pd: no PD with that handle in this file");
  ParentPins pins;
  if (!pins.Take(original->life)) return Fail(EBUSY, "import_pd: the PD is being freed");
  auto* face = new Pd{};
  face->ibv.context = into;
  face->ibv.handle = original->ibv.handle;
  face->device = device;
  face->pdn = original->pdn;
  face->protection_domain = original;
  face->imported = true;
  face->free_face = &UnimportPd;
  pins.Keep();
  device->registry().Publish<ObjectKind::kImportedPd>(op, face, face->life);
  return face;
}

Result<Mr*> ImportMr(Pd* pd, uint32_t mr_handle) {
  if (pd == nullptr) return Fail(EINVAL, "import_mr: null PD");
  ibv_context* into = pd->ibv.context;
  ibv_pd* verbs_pd = &pd->ibv;  // the face's PD as the application sees it
  if (pd->imported) pd = pd->protection_domain;  // the face pins the PD itself (Pd::Parent)
  Device& device = *pd->device;
  ONCHIP_TRY(auto op, device.registry().Begin("import_mr: device closed"));
  Mr* original =
      FindOfFile<ObjectKind::kMr>(device.registry(), into, mr_handle);
  if (original == nullptr) return Fail(ENOENT, "import_mr: no MR with that handle in this file");
  ParentPins pins;
  if (!pins.Take(original->life) || !pins.Take(pd->life))
    return Fail(EBUSY, "import_mr: the MR or the PD is being freed");
  auto* face = new Mr{};
  face->ibv.context = into;
  face->ibv.pd = verbs_pd;
  face->ibv.handle = original->ibv.handle;
  face->ibv.addr = nullptr;
  face->ibv.length = original->ibv.length;
  face->ibv.lkey = original->ibv.lkey;
  face->ibv.rkey = original->ibv.rkey;
  face->mr_type = original->mr_type;
  face->access = original->access;
  face->device = pd->device;
  face->pd = pd;
  face->mkey_index = original->mkey_index;
  face->imported_from = original;
  face->free_face = &UnimportMr;
  pins.Keep();
  device.registry().Publish<ObjectKind::kImportedMr>(op, face, face->life);
  return face;
}

Result<Dm*> ImportDm(const std::shared_ptr<Device>& device, ibv_context* into, uint32_t dm_handle) {
  if (!device || into == nullptr) return Fail(EINVAL, "import_dm: no device");
  ONCHIP_TRY(auto op, device->registry().Begin("import_dm: device closed"));
  Dm* original = FindOfFile<ObjectKind::kDm>(device->registry(), into, dm_handle);
  if (original == nullptr) return Fail(ENOENT, "import_dm: no DM with that handle in this file");
  ParentPins pins;
  if (!pins.Take(original->life)) return Fail(EBUSY, "import_dm: the DM is being freed");
  auto* face = new Dm{};
  face->ibv = original->ibv;  // its copy ops, comp_mask and handle
  face->ibv.context = into;
  face->device = device;
  face->type = original->type;
  face->length = original->length;
  face->start_va = original->start_va;
  face->remote_va = original->remote_va;
  face->imported_from = original;
  face->free_face = &UnimportDm;
  pins.Keep();
  device->registry().Publish<ObjectKind::kImportedDm>(op, face, face->life);
  return face;
}

Result<void> UnimportPd(Pd* pd) {
  if (pd == nullptr || !pd->imported) return Fail(EINVAL, "unimport_pd: not an imported PD");
  return Destroy<ObjectKind::kImportedPd>(pd->device->registry(), pd, pd->life,
                                          "unimport_pd: objects still use this imported PD");
}

Result<void> UnimportMr(Mr* mr) {
  if (mr == nullptr || mr->imported_from == nullptr)
    return Fail(EINVAL, "unimport_mr: not an imported MR");
  return Destroy<ObjectKind::kImportedMr>(mr->device->registry(), mr, mr->life,
                                          "unimport_mr: still in use");
}

Result<void> UnimportDm(Dm* dm) {
  if (dm == nullptr || dm->imported_from == nullptr)
    return Fail(EINVAL, "unimport_dm: not an imported DM");
  return Destroy<ObjectKind::kImportedDm>(dm->device->registry(), dm, dm->life,
                                          "unimport_dm: memory regions still use it");
}

Result<void> KindTraits<ObjectKind::kImportedPd>::ReleaseOnDevice(Pd& object, Release why) {
  return ReleasePdFace(object, why);
}

Result<void> KindTraits<ObjectKind::kImportedMr>::ReleaseOnDevice(Mr& object, Release why) {
  return ReleaseMrFace(object, why);
}

Result<void> KindTraits<ObjectKind::kImportedDm>::ReleaseOnDevice(Dm& object, Release why) {
  return ReleaseDmFace(object, why);
}

}  // namespace onchip::driver
