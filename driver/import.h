// Objects seen through a second context of the same uverbs file (ibv_import_pd, ibv_import_mr,
// ibv_import_dm and their unimport calls).
//
// The kernel keys objects by uverbs file: a context imported from a dup of another's command fd
// (ibv_import_device) reaches the same objects by their handles. Here an import is a face: a new
// verbs object of the importing context (ibv_pd, ibv_mr or ibv_dm, with that context and the
// original's handle and keys) that reaches the original driver object, as a parent domain
// reaches its PD. A face pins its original, so the original answers EBUSY to destroy while faces
// of it live; unimporting (or destroying) a face frees the face only. The device is never
// commanded: the original's device objects are the ones work requests name.
//
// An object is found when it is published, of that kind, has the handle, and was created through
// a context of the importer's file (Device::SameFile).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "driver/device.h"
#include "driver/dm.h"
#include "driver/mr.h"
#include "driver/pd.h"
#include "driver/registry.h"
#include "uapi/result.h"

namespace onchip::driver {

// ENOENT when no PD of the importer's file has `pd_handle` (a parent domain is not importable);
// EBUSY while that PD is being freed.
Result<Pd*> ImportPd(const std::shared_ptr<Device>& device, ibv_context* into, uint32_t pd_handle);
// ENOENT when no MR of `pd`'s file has `mr_handle`; the face belongs to `pd` (pinned) and to its
// context, and carries the original's keys, length and access (its addr is null, as the kernel's
// import leaves it).
Result<Mr*> ImportMr(Pd* pd, uint32_t mr_handle);
// ENOENT when no DM of the importer's file has `dm_handle`; copies through the face reach the
// original's memory.
Result<Dm*> ImportDm(const std::shared_ptr<Device>& device, ibv_context* into, uint32_t dm_handle);

// Free a face (EINVAL for an object that is not one). After Close() released the device, a face
// is freed all the same.
Result<void> UnimportPd(Pd* pd);
Result<void> UnimportMr(Mr* mr);
Result<void> UnimportDm(Dm* dm);

// The registry's view of the imported faces (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kImportedPd> {
  using Object = Pd;
  static Result<void> ReleaseOnDevice(Pd& object, Release why);  // import.cc
};

template <>
struct KindTraits<ObjectKind::kImportedMr> {
  using Object = Mr;
  static Result<void> ReleaseOnDevice(Mr& object, Release why);  // import.cc
};

template <>
struct KindTraits<ObjectKind::kImportedDm> {
  using Object = Dm;
  static Result<void> ReleaseOnDevice(Dm& object, Release why);  // import.cc
};

}  // namespace onchip::driver
