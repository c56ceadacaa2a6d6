// XRC domains (ibv_open_xrcd / ibv_close_xrcd; ALLOC_XRCD / DEALLOC_XRCD), shaped as libibverbs'
// verbs_xrcd.
//
// An XRC domain groups XRC SRQs and the XRC receive (target) QPs that may take receives from
// them: a message an XRC send QP addresses to an XRC SRQ is accepted only by a target QP of the
// SRQ's domain.
//
// ibv_open_xrcd's file: the kernel keys a domain by the inode of the file given, so that
// processes opening the same file share one domain. onchip runs each process on its own
// function context (the device's owner tags differ), so it shares a domain among the opens of
// one device within a process: the first open of a file creates it (O_CREAT needed, else
// EAGAIN, as ib_uverbs_open_xrcd answers), later opens of the same inode get the same Xrcd
// (O_EXCL: EINVAL), each open counts, and ibv_close_xrcd frees it on the last close. fd -1
// always makes a domain of its own. A bad fd is EBADF. Domains are not shared across processes
// (see driver/verbs/README.md).
//
// The domain is pinned by the XRC SRQs and XRC QPs in it: the last close answers EBUSY (and
// keeps its open) while any lives. One difference from the kernel: it counts SRQs and QPs per
// handle (closing the handle they were made through is EBUSY even if another open remains);
// here every open of a file is the same handle, so only the last close can be EBUSY.
#pragma once

#include <sys/types.h>

#include <infiniband/verbs.h>

#include <memory>
#include <optional>
#include <utility>

#include "driver/device.h"
#include "driver/registry.h"
#include "uapi/verbs/abi34.h"

namespace onchip::driver {

struct Xrcd {
  ibverbs_abi::verbs_xrcd verbs;  // first: From() converts back; verbs.xrcd is the ibv_xrcd
  std::shared_ptr<Device> device;
  uint32_t xrcdn = 0;
  Life life;  // pinned by its XRC SRQs and XRC QPs
  std::optional<std::pair<dev_t, ino_t>> inode;  // the file it was opened with, if any
  uint32_t opens = 1;                            // opens not yet closed (shared by inode)

  static Xrcd* From(ibv_xrcd* x) { return reinterpret_cast<Xrcd*>(x); }
  ibv_xrcd& ibv() { return verbs.xrcd; }
};

// `fd` -1 or an open file; `oflags` O_CREAT and O_EXCL as ibv_open_xrcd(3) says.
Result<Xrcd*> OpenXrcd(const std::shared_ptr<Device>& device, int fd, int oflags);
// Drops one open; the last one runs DEALLOC_XRCD (EBUSY while SRQs or QPs use the domain).
Result<void> CloseXrcd(Xrcd* xrcd);
// DEALLOC_XRCD only; how Close() releases a domain.
Result<void> ReleaseXrcdOnDevice(Xrcd& xrcd, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kXrcd> {
  using Object = Xrcd;
  static Result<void> ReleaseOnDevice(Xrcd& object, Release why);  // xrcd.cc
};

}  // namespace onchip::driver
