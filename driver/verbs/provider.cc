// onchip as a libibverbs provider (private ABI 34): registration, the verbs_device for each
// uverbs device whose modalias is onchip's, and the context behind ibv_open_device.
//
// Discovery: libibverbs reads the sysfs tree (SYSFS_PATH) and matches device/modalias against
// "onchip:*", a modalias no stock provider claims. Opening the device opens the function its
// locator names (driver/open.h) and brings the driver up on it (session.h). The locator is the
// environment's ONCHIP_DEVICE when set, else the device's sysfs entry device/onchip_locator,
// else "sim" (the software ConnectX in this process, linked into the plugin by its build rule).
//
// The context's file descriptors (libibverbs talks to no kernel here):
//   - cmd_fd: /dev/null opened read-only. ioctl() fails with ENOTTY, so libibverbs reads GIDs
//     from sysfs; write() fails with EBADF, so verbs that have no provider hook and write
//     commands fail cleanly instead of "succeeding" on /dev/null. ibv_create_comp_channel is
//     such a verb: the plugin defines it (exported_calls.cc) and answers it for onchip contexts.
//   - async_fd: the read end of a pipe the session owns the write end of; the device's event
//     thread writes the context's async events there (driver/events.h).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "driver/events.h"
#include "driver/mr.h"
#include "driver/port.h"
#include "driver/rings/data_path.h"
#include "driver/verbs/abi34.h"
#include "driver/verbs/attributes.h"
#include "driver/verbs/provider.h"
#include "driver/verbs/session.h"
#include "driver/verbs/calls.h"

namespace onchip::driver::verbs {
namespace {

using abi::verbs_context_ops;
using abi::verbs_device;
using abi::verbs_device_ops;
using abi::verbs_match_ent;
using abi::verbs_sysfs_dev;

// The per-uverbs-device ABI version `tools/onchip run` publishes (class/infiniband_verbs/uverbsN/
// abi_version); there is no kernel, so it only has to agree with the tree.
constexpr uint32_t kAbiVersion = 1;

struct OnchipDevice {
  verbs_device vdev;  // first: libibverbs hands back &vdev
  Identity id;
  std::string locator;  // from sysfs at discovery; ONCHIP_DEVICE overrides it at open
};

// The function a context of `dev` opens (see the header comment for the order).
Result<driver::Locator> LocatorFor(const OnchipDevice& dev) {
  if (const char* env = std::getenv("ONCHIP_DEVICE"); env != nullptr && *env != '\0')
    return driver::Locator::Parse(env);
  if (!dev.locator.empty()) return driver::Locator::Parse(dev.locator);
  return driver::Locator::Sim();
}

struct OnchipContext {
  verbs_context vctx;  // libibverbs' part; its ibv_context is its last member
  Session* session;
  Identity id;  // the device's, with the firmware version this session's device reports
  pid_t owner;  // the process that opened it: the only one its software ConnectX runs in
  // The port as the last query the opener made found it (driver::PortInfo), in two words a
  // forked child can read without a lock (PackPort below).
  std::atomic<uint64_t> port_word0{0};
  std::atomic<uint64_t> port_word1{0};
};

void StorePort(OnchipContext* c, const driver::PortInfo& p) {
  c->port_word0.store(uint64_t{p.infiniband} | uint64_t{p.link_up} << 1 | uint64_t{p.state} << 8 |
                          uint64_t{p.phys_state} << 16 | uint64_t{p.lid} << 24 |
                          uint64_t{p.sm_lid} << 40 | uint64_t{p.lmc} << 56 | uint64_t{p.sm_sl} << 60,
                      std::memory_order_relaxed);
  c->port_word1.store(uint64_t{p.cap_mask1} | uint64_t{p.subnet_timeout} << 32 |
                          uint64_t{p.init_type_reply} << 40,
                      std::memory_order_relaxed);
}

driver::PortInfo LoadPort(const OnchipContext* c) {
  const uint64_t w0 = c->port_word0.load(std::memory_order_relaxed);
  const uint64_t w1 = c->port_word1.load(std::memory_order_relaxed);
  driver::PortInfo p;
  p.infiniband = w0 & 1;
  p.link_up = (w0 >> 1) & 1;
  p.state = static_cast<uint8_t>(w0 >> 8);
  p.phys_state = static_cast<uint8_t>(w0 >> 16);
  p.lid = static_cast<uint16_t>(w0 >> 24);
  p.sm_lid = static_cast<uint16_t>(w0 >> 40);
  p.lmc = static_cast<uint8_t>((w0 >> 56) & 7);
  p.sm_sl = static_cast<uint8_t>((w0 >> 60) & 0xf);
  p.cap_mask1 = static_cast<uint32_t>(w1);
  p.subnet_timeout = static_cast<uint8_t>(w1 >> 32);
  p.init_type_reply = static_cast<uint8_t>(w1 >> 40);
  return p;
}

OnchipContext* From(ibv_context* ctx) {
  return reinterpret_cast<OnchipContext*>(reinterpret_cast<char*>(ctx) -
                                          offsetof(OnchipContext, vctx) -
                                          offsetof(verbs_context, context));
}

// ---- sysfs reads at alloc_device ----

bool ReadSysfs(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  char buf[256];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  out->assign(buf, n);
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

// "0c42:a103:0000:0001" (the kernel's %04x:%04x:%04x:%04x) -> host-order GUID; 0 if absent.
uint64_t ReadGuid(const std::string& path) {
  std::string s;
  unsigned a, b, c, d;
  if (!ReadSysfs(path, &s) || std::sscanf(s.c_str(), "%x:%x:%x:%x", &a, &b, &c, &d) != 4) return 0;
  return uint64_t{a} << 48 | uint64_t{b} << 32 | uint64_t{c} << 16 | d;
}

// How many consecutive GIDs the tree publishes for port 1 (gids/0, gids/1, ...).
uint32_t CountGids(const std::string& ibdev_path) {
  uint32_t n = 0;
  while (n < 4096 && access((ibdev_path + "/ports/1/gids/" + std::to_string(n)).c_str(), R_OK) == 0)
    ++n;
  return n;
}

// ---- context ops ----

int QueryDeviceEx(ibv_context* context, const ibv_query_device_ex_input* input,
                  ibv_device_attr_ex* attr, size_t attr_size) {
  if (attr == nullptr || attr_size < sizeof(ibv_device_attr)) return EINVAL;
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  OnchipContext* c = From(context);
  const ibv_device_attr_ex full = DeviceAttributes(c->session->device(), c->id);
  // ibv_query_device passes sizeof(ibv_device_attr): bytes past attr_size belong to the caller.
  std::memcpy(attr, &full, std::min(attr_size, sizeof(full)));
  return 0;
}

int QueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  if (attr == nullptr) return EINVAL;
  OnchipContext* c = From(context);
  // Only the opening process may command the device (see "the process that opened the context"
  // below); a forked child answers with the link state its parent last saw.
  if (c->owner == getpid()) {
    auto info = driver::QueryPort(c->session->device());
    if (!info) return info.error().errno_value();
    StorePort(c, *info);
  }
  return PortAttributes(c->session->device(), c->id, port, LoadPort(c), attr);
}

// ibv_dereg_mr hands over the verbs_mr; driver::Mr begins with that very layout.
static_assert(offsetof(driver::Mr, ibv) == offsetof(abi::verbs_mr, mr));
static_assert(offsetof(driver::Mr, mr_type) == offsetof(abi::verbs_mr, mr_type));
static_assert(offsetof(driver::Mr, access) == offsetof(abi::verbs_mr, access));

int DeregMr(abi::verbs_mr* vmr) { return driver::verbs::dereg_mr(&vmr->mr); }

// libibverbs' ibv_rereg_mr has already refused a non-plain MR, unknown flags, an empty new range
// and access bits without CHANGE_ACCESS; it sets mr->pd, addr and length itself on success.
int ReregMr(abi::verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  return driver::verbs::rereg_mr(&vmr->mr, flags, pd, addr, length, access);
}

// libibverbs' ibv_reg_mr(_iova2) then fills mr->context, pd, addr and length itself (the same
// values the driver set).
ibv_mr* RegMr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
  return driver::verbs::reg_mr(pd, addr, length, hca_va, static_cast<unsigned>(access));
}

// ---- the process that opened the context ----
//
// The software ConnectX runs as threads of the process that opened the context. A forked child
// inherits the context and the device's shared mappings but none of its threads: a command it
// posted would land in the parent's command queue (or never complete), corrupting the parent's
// device. So every op that commands the device answers ENODEV outside the opening process: the
// child has no device. (Queries answer from the caps read at open and stay available.)

ibv_context* ContextOf(ibv_context* c) { return c; }
ibv_context* ContextOf(ibv_pd* pd) { return pd->context; }
ibv_context* ContextOf(ibv_dm* dm) { return dm->context; }
ibv_context* ContextOf(ibv_mw* mw) { return mw->context; }
ibv_context* ContextOf(ibv_td* td) { return td->context; }
ibv_context* ContextOf(abi::verbs_mr* vmr) { return vmr->mr.context; }
ibv_context* ContextOf(ibv_cq* cq) { return cq->context; }
ibv_context* ContextOf(ibv_qp* qp) { return qp->context; }
ibv_context* ContextOf(ibv_srq* srq) { return srq->context; }
ibv_context* ContextOf(ibv_ah* ah) { return ah->context; }
ibv_context* ContextOf(ibv_xrcd* xrcd) { return xrcd->context; }

bool InOpeningProcess(const ibv_context* context) {
  return From(const_cast<ibv_context*>(context))->owner == getpid();
}

template <auto Op>
struct OwnerOnly;

template <class R, class Object, class... Args, R (*Op)(Object*, Args...)>
struct OwnerOnly<Op> {
  static R Call(Object* object, Args... args) {
    // A null object is the driver's to refuse (EINVAL), as rdma-core's would crash or refuse.
    if (object != nullptr && !InOpeningProcess(ContextOf(object))) {
      if constexpr (std::is_pointer_v<R>) {
        errno = ENODEV;
        return nullptr;
      } else {
        errno = ENODEV;  // ibv_rereg_mr reports its provider's failure through errno alone
        return ENODEV;
      }
    }
    return Op(object, args...);
  }
};

void FreeContext(ibv_context* context) {
  OnchipContext* c = From(context);
  // In a forked child the device's threads do not exist: leave the parent's device alone and
  // release only what libibverbs gave this process.
  if (InOpeningProcess(context)) {
    if (EventThread* events = c->session->device().events()) events->RemoveAsyncSink(context);
    c->session->device().StopServing(context);
    delete c->session;  // the last session on the device tears the driver down and stops it
  }
  c->session = nullptr;
  verbs_uninit_context(&c->vctx);  // closes cmd_fd and async_fd
  std::free(c);
}

const verbs_context_ops kContextOps = [] {
  verbs_context_ops ops{};
  // The calls.h entry points have exactly these signatures: the driver's objects are the
  // verbs objects libibverbs hands to the application. The hot paths (post, poll, arm) go
  // straight to the rings: no check of the opening process there, which would cost a syscall.
  ops.alloc_dm = OwnerOnly<driver::verbs::alloc_dm>::Call;
  ops.alloc_mw = OwnerOnly<driver::verbs::alloc_mw>::Call;
  ops.alloc_parent_domain = OwnerOnly<driver::verbs::alloc_parent_domain>::Call;
  ops.alloc_pd = OwnerOnly<driver::verbs::alloc_pd>::Call;
  ops.alloc_td = OwnerOnly<driver::verbs::alloc_td>::Call;
  ops.bind_mw = OwnerOnly<driver::verbs::bind_mw>::Call;
  ops.cq_event = driver::rings::CqEvent;
  ops.create_ah = OwnerOnly<driver::verbs::create_ah>::Call;
  ops.create_cq = OwnerOnly<driver::verbs::create_cq>::Call;
  ops.create_cq_ex = OwnerOnly<driver::verbs::create_cq_ex>::Call;
  ops.create_qp = OwnerOnly<driver::verbs::create_qp>::Call;
  ops.create_qp_ex = OwnerOnly<driver::verbs::create_qp_ex>::Call;
  ops.create_srq = OwnerOnly<driver::verbs::create_srq>::Call;
  ops.create_srq_ex = OwnerOnly<driver::verbs::create_srq_ex>::Call;
  ops.close_xrcd = OwnerOnly<driver::verbs::close_xrcd>::Call;
  ops.get_srq_num = OwnerOnly<driver::verbs::get_srq_num>::Call;
  ops.open_xrcd = OwnerOnly<driver::verbs::open_xrcd>::Call;
  ops.dealloc_mw = OwnerOnly<driver::verbs::dealloc_mw>::Call;
  ops.dealloc_pd = OwnerOnly<driver::verbs::dealloc_pd>::Call;  // parent domains too
  ops.dealloc_td = OwnerOnly<driver::verbs::dealloc_td>::Call;
  ops.destroy_ah = OwnerOnly<driver::verbs::destroy_ah>::Call;
  ops.destroy_cq = OwnerOnly<driver::verbs::destroy_cq>::Call;
  ops.destroy_qp = OwnerOnly<driver::verbs::destroy_qp>::Call;
  ops.destroy_srq = OwnerOnly<driver::verbs::destroy_srq>::Call;
  ops.dereg_mr = OwnerOnly<DeregMr>::Call;
  ops.free_context = FreeContext;
  ops.free_dm = OwnerOnly<driver::verbs::free_dm>::Call;
  ops.modify_qp = OwnerOnly<driver::verbs::modify_qp>::Call;
  ops.modify_srq = OwnerOnly<driver::verbs::modify_srq>::Call;
  ops.poll_cq = driver::rings::PollCq;
  ops.post_recv = driver::rings::PostRecv;
  ops.post_send = driver::rings::PostSend;
  ops.post_srq_recv = driver::rings::PostSrqRecv;
  ops.query_device_ex = QueryDeviceEx;
  ops.query_port = QueryPort;
  ops.query_qp = OwnerOnly<driver::verbs::query_qp>::Call;
  ops.query_srq = OwnerOnly<driver::verbs::query_srq>::Call;
  ops.reg_dm_mr = OwnerOnly<driver::verbs::reg_dm_mr>::Call;
  ops.reg_mr = OwnerOnly<RegMr>::Call;
  ops.req_notify_cq = driver::rings::ReqNotifyCq;
  ops.rereg_mr = OwnerOnly<ReregMr>::Call;
  ops.resize_cq = OwnerOnly<driver::verbs::resize_cq>::Call;
  ops.modify_cq = OwnerOnly<driver::verbs::modify_cq>::Call;
  return ops;
}();

// ---- device ops ----

verbs_context* AllocContext(ibv_device* ibdev, int cmd_fd, void* /*private_data*/) {
  // Swap the node libibverbs opened (read-write) for the harmless read-only /dev/null.
  const int harmless = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(cmd_fd);
  if (harmless < 0) return nullptr;

  auto* c = static_cast<OnchipContext*>(_verbs_init_and_alloc_context(
      ibdev, harmless, sizeof(OnchipContext),
      reinterpret_cast<verbs_context*>(offsetof(OnchipContext, vctx)), 0));
  if (c == nullptr) return nullptr;  // errno set, fd closed

  auto locator = LocatorFor(*reinterpret_cast<const OnchipDevice*>(ibdev));
  auto session = locator ? Session::Open(*locator)
                         : Result<std::unique_ptr<Session>>(std::unexpected(locator.error()));
  if (!session) {
    std::fprintf(stderr, "onchip: cannot open %s: %s\n", ibdev->name,
                 session.error().describe().c_str());
    verbs_uninit_context(&c->vctx);
    std::free(c);
    errno = session.error().errno_value();
    return nullptr;
  }
  c->session = session->release();
  // Objects the driver creates point at this context, the one libibverbs dispatches through.
  c->session->device().Serve(&c->vctx.context);
  c->id = reinterpret_cast<const OnchipDevice*>(ibdev)->id;
  c->owner = getpid();
  // What a forked child answers until the opener queries again: the port at open (a link up
  // with its link layer, should the query fail).
  driver::PortInfo port_at_open;
  port_at_open.infiniband = driver::IsInfiniBand(c->session->device());
  if (auto info = driver::QueryPort(c->session->device())) port_at_open = *info;
  StorePort(c, port_at_open);
  c->id.fw_ver = c->session->fw_ver();
  c->vctx.context.async_fd = c->session->TakeAsyncReadFd();
  // Async events of this context's objects (and port events) go to its async_fd.
  if (EventThread* events = c->session->device().events())
    events->AddAsyncSink(&c->vctx.context, c->session->async_write_fd());
  c->vctx.context.num_comp_vectors = 1;  // the device's one completion EQ (driver/eq.h)
  verbs_set_ops(&c->vctx, &kContextOps);
  return &c->vctx;
}

verbs_device* AllocDevice(verbs_sysfs_dev* sysfs) {
  auto* d = new (std::nothrow) OnchipDevice{};
  if (d == nullptr) return nullptr;
  const std::string path = sysfs->ibdev_path;
  d->id.node_guid = ReadGuid(path + "/node_guid");
  d->id.sys_image_guid = ReadGuid(path + "/sys_image_guid");
  d->id.gid_table_len = CountGids(path);
  ReadSysfs(path + "/device/onchip_locator", &d->locator);
  // The driver accepts the optional access bits (relaxed ordering): let ibv_reg_mr pass them.
  d->vdev.core_support = abi::kCoreSupportOptionalMrAccess;
  return &d->vdev;
}

void UninitDevice(verbs_device* vdev) { delete reinterpret_cast<OnchipDevice*>(vdev); }

const verbs_match_ent kMatchTable[] = {
    {.driver_data = nullptr, .u = {.modalias = "onchip:*"}, .vendor = 0, .device = 0,
     .kind = abi::kMatchModalias},
    {},
};

const verbs_device_ops kDeviceOps = {
    .name = "onchip",
    .match_min_abi_version = kAbiVersion,
    .match_max_abi_version = kAbiVersion,
    .match_table = kMatchTable,
    .static_providers = nullptr,
    .match_device = nullptr,
    .alloc_context = AllocContext,
    .import_context = nullptr,
    .alloc_device = AllocDevice,
    .uninit_device = UninitDevice,
};

__attribute__((constructor)) void RegisterProvider() { verbs_register_driver_34(&kDeviceOps); }

}  // namespace

bool OpenedInThisProcess(const ibv_context* context) { return InOpeningProcess(context); }

bool IsOnchipContext(const ibv_context* context) {
  // Every device libibverbs 44 lists is a verbs_device; ours carry kDeviceOps.
  return context != nullptr && context->device != nullptr &&
         reinterpret_cast<const verbs_device*>(context->device)->ops == &kDeviceOps;
}

}  // namespace onchip::driver::verbs
