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
#include <linux/kcmp.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "driver/events.h"
#include "driver/mr.h"
#include "driver/port.h"
#include "driver/rings/data_path.h"
#include "uapi/verbs/abi34.h"
#include "driver/verbs/attributes.h"
#include "driver/verbs/provider.h"
#include "driver/verbs/session.h"
#include "driver/verbs/calls.h"
#include "uapi/prm/init_seg_access.h"
#include "log/log.h"
#include "log/missing.h"
#include "log/version.h"

namespace onchip::driver::verbs {
namespace {

using ibverbs_abi::verbs_context_ops;
using ibverbs_abi::verbs_device;
using ibverbs_abi::verbs_device_ops;
using ibverbs_abi::verbs_match_ent;
using ibverbs_abi::verbs_sysfs_dev;

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
  // What this context runs in the process `owner` names: the opener's session, or, in a forked
  // child that used the context, the child's own (see "the process a context serves" below).
  Session* session;
  Identity id;  // the device's, with the firmware version this session's device reports
  // The process `session` belongs to. Stored (release) after `session`, so a thread that sees
  // its own pid here (acquire) sees this process's session.
  std::atomic<pid_t> owner;
  // The port as the last query the serving process made found it (driver::PortInfo), in two
  // words a forked child can read without a lock (StorePort below).
  std::atomic<uint64_t> port_word0{0};
  std::atomic<uint64_t> port_word1{0};
  // Which uverbs file the context is a face of: its own number, or (ibv_import_device) the one
  // of the context whose command fd it was imported from. Objects are shared within a file.
  uint64_t file;
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

// ibv_query_rt_values_ex, as libmlx5's mlx5_query_rt_values (rdma-core providers/mlx5/verbs.c):
// comp_mask bits other than IBV_VALUES_MASK_RAW_CLOCK EINVAL; the raw clock is the device's
// free-running internal timer, read from the init segment (no command: two reads of the high
// word around the low one, prm::init_seg::ReadInternalTimer), in raw_clock.tv_nsec with tv_sec
// 0. It is the clock completion timestamps carry (completion_timestamp_mask).
int QueryRtValues(ibv_context* context, ibv_values_ex* values) {
  if (values == nullptr) return EINVAL;
  if (values->comp_mask & ~uint32_t{IBV_VALUES_MASK_RAW_CLOCK}) return EINVAL;
  uint32_t answered = 0;
  if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
    const uint64_t ticks = prm::init_seg::ReadInternalTimer(From(context)->session->device().bus());
    values->raw_clock.tv_sec = 0;
    values->raw_clock.tv_nsec = static_cast<long>(ticks);
    answered |= IBV_VALUES_MASK_RAW_CLOCK;
  }
  values->comp_mask = answered;
  return 0;
}

int QueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  if (attr == nullptr) return EINVAL;
  OnchipContext* c = From(context);
  // Only the process the context serves may command its device (see "the process a context
  // serves" below); a forked child that has not used the context answers with the port its
  // parent last saw.
  if (c->owner.load(std::memory_order_acquire) == getpid()) {
    auto info = driver::QueryPort(c->session->device());
    if (!info) return info.error().errno_value();
    StorePort(c, *info);
  }
  return PortAttributes(c->session->device(), c->id, port, LoadPort(c), attr);
}

// ibv_dereg_mr hands over the verbs_mr; driver::Mr begins with that very layout.
static_assert(offsetof(driver::Mr, ibv) == offsetof(ibverbs_abi::verbs_mr, mr));
static_assert(offsetof(driver::Mr, mr_type) == offsetof(ibverbs_abi::verbs_mr, mr_type));
static_assert(offsetof(driver::Mr, access) == offsetof(ibverbs_abi::verbs_mr, access));

int DeregMr(ibverbs_abi::verbs_mr* vmr) { return driver::verbs::dereg_mr(&vmr->mr); }

// libibverbs' ibv_rereg_mr has already refused a non-plain MR, unknown flags, an empty new range
// and access bits without CHANGE_ACCESS; it sets mr->pd, addr and length itself on success.
int ReregMr(ibverbs_abi::verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  return driver::verbs::rereg_mr(&vmr->mr, flags, pd, addr, length, access);
}

// libibverbs' ibv_reg_mr(_iova2) then fills mr->context, pd, addr and length itself (the same
// values the driver set).
ibv_mr* RegMr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
  // driver/mr.cc refuses it with EOPNOTSUPP; the user hears why.
  if (access & IBV_ACCESS_ON_DEMAND)
    log::Missing("ibv_reg_mr", "on-demand paging (IBV_ACCESS_ON_DEMAND)");
  return driver::verbs::reg_mr(pd, addr, length, hca_va, static_cast<unsigned>(access));
}

// ---- the process a context serves ----
//
// A forked child inherits every context its parent opened, as a child inherits the uverbs file
// under a kernel, and rdma-core's own tests use the parent's context in children
// (DMTest.test_multi_process_alloc_dm allocates device memory on it from five at once). What the
// child inherits of onchip's session is a copy of memory: the driver's Device with its locks as
// they were at fork, and its command path (the command queue in BAR0, or the socket to the
// device daemon), which the parent's threads go on using; but none of its threads (the event
// thread; the in-process software ConnectX) and none of its DMA memory (MADV_DONTFORK). The
// child must never drive any of it: a command would land in the parent's queue or interleave
// with the parent's frames.
//
// So the session is per process. The first call in a child that commands the device through an
// inherited context opens the child's own session on the same locator (Session::Open keys its
// devices by process): for a device daemon's function ("simd:") that is a connection of its own,
// a client the daemon serves like any other, so what the child creates is the child's, and the
// daemon releases it when the child exits, as the kernel releases a uverbs file's objects. The
// context then serves the child: its objects point at it, its async_fd is the child's own pipe
// (dup3 over the inherited read end, which would otherwise steal the parent's events). The
// parent's session is left as the fork copied it, never used nor destroyed in the child.
//
// An in-process software ConnectX runs as threads of the opener: a child cannot reach that
// device at all (nothing serves its commands), nor a VFIO function (the opener holds the group),
// so there every call that would command the device answers ENODEV in the child.
//
// Objects are another matter: the parent's PD, MR, CQ, QP, DM... are its device's, in the
// parent's command path, so every op given one in the child answers ENODEV (Device::
// InThisProcess); as an argument of the child's own objects they are not found (EINVAL/ENOENT,
// calls.cc). The hot paths (post, poll, arm) are not checked (a getpid() syscall per post): on
// the parent's queues a child touches memory the fork did not copy, as with libmlx5.

// Two threads of a child using a context at once open one session. Only taken in a process that
// did not open the context, before the session's own locks.
std::mutex& AdoptMu() {
  static std::mutex mu;
  return mu;
}

// The table of this process's contexts (ibv_import_device, below).
std::mutex& ContextsMu();
void Delist(OnchipContext* c);

// fork() waits for the locks a child's first command (or import) takes, in the order they are
// taken, so the child never inherits one held by a thread it does not have (pthread_atfork,
// registered with the provider below; the child's copy is released by the forking thread's copy).
void HoldForFork() {
  AdoptMu().lock();
  Session::HoldForFork();
  ContextsMu().lock();
}
void ReleaseAfterFork() {
  ContextsMu().unlock();
  Session::ReleaseAfterFork();
  AdoptMu().unlock();
}

// 0 when `c` serves this process (after opening this process's session on its function if need
// be), else the errno a command through it fails with.
int ServeThisProcess(OnchipContext* c) {
  const pid_t self = getpid();
  if (c->owner.load(std::memory_order_acquire) == self) return 0;
  std::lock_guard lock(AdoptMu());
  if (c->owner.load(std::memory_order_relaxed) == self) return 0;
  // Reading the inherited session's locator is reading copied memory; nothing else of it is used.
  const driver::Locator locator = c->session->locator();
  if (locator.scheme != driver::Locator::Scheme::kSimDaemon) return ENODEV;
  auto opened = Session::Open(locator);
  if (!opened) {
    log::Say(log::Level::kWarn, "onchip: cannot open %s in process %d: %s", locator.str().c_str(),
             static_cast<int>(self), opened.error().describe().c_str());
    return opened.error().errno_value();
  }
  std::unique_ptr<Session> session = std::move(*opened);
  ibv_context* context = &c->vctx.context;
  // The context's async_fd number stays what libibverbs and the application know; behind it,
  // this process's pipe instead of the parent's.
  const int read_fd = session->TakeAsyncReadFd();
  const int replaced = dup3(read_fd, context->async_fd, O_CLOEXEC);
  const int e = errno;
  close(read_fd);
  if (replaced < 0) return e;
  session->device().Serve(context, c->file);
  if (EventThread* events = session->device().events())
    events->AddAsyncSink(context, session->async_write_fd());
  c->session = session.release();
  c->owner.store(self, std::memory_order_release);
  return 0;
}

ibv_context* ContextOf(ibv_context* c) { return c; }
ibv_context* ContextOf(ibv_pd* pd) { return pd->context; }
ibv_context* ContextOf(ibv_dm* dm) { return dm->context; }
ibv_context* ContextOf(ibv_mw* mw) { return mw->context; }
ibv_context* ContextOf(ibv_td* td) { return td->context; }
ibv_context* ContextOf(ibverbs_abi::verbs_mr* vmr) { return vmr->mr.context; }
ibv_context* ContextOf(ibv_mr* mr) { return mr->context; }
ibv_context* ContextOf(ibv_cq* cq) { return cq->context; }
ibv_context* ContextOf(ibv_qp* qp) { return qp->context; }
ibv_context* ContextOf(ibv_srq* srq) { return srq->context; }
ibv_context* ContextOf(ibv_ah* ah) { return ah->context; }
ibv_context* ContextOf(ibv_xrcd* xrcd) { return xrcd->context; }

// Whether this process made the object (for a context: always; it is served above).
bool MadeHere(ibv_context*) { return true; }
bool MadeHere(ibverbs_abi::verbs_mr* vmr) { return driver::verbs::OfThisProcess(&vmr->mr); }
template <class Object>
bool MadeHere(Object* object) {
  return driver::verbs::OfThisProcess(object);
}

// 0 when this process may command the device about `object`, else the errno.
template <class Object>
int Reach(Object* object) {
  // An object of the parent's is refused before the context is served here: using it opens
  // nothing in the child.
  if (!MadeHere(object)) return ENODEV;
  return ServeThisProcess(From(ContextOf(object)));
}

template <auto Op>
struct ThisProcess;

template <class R, class Object, class... Args, R (*Op)(Object*, Args...)>
struct ThisProcess<Op> {
  static R Call(Object* object, Args... args) {
    // A null object is the driver's to refuse (EINVAL), as rdma-core's would crash or refuse.
    if (object != nullptr) {
      if (const int e = Reach(object)) {
        errno = e;  // ibv_rereg_mr reports its provider's failure through errno alone
        if constexpr (std::is_pointer_v<R>) return nullptr;
        else if constexpr (std::is_void_v<R>) return;  // the unimport calls
        else return e;
      }
    }
    return Op(object, args...);
  }
};

void FreeContext(ibv_context* context) {
  OnchipContext* c = From(context);
  Delist(c);
  // The session this process runs (the opener's, or a child's own) is closed: the last session
  // on its device releases what was left through this process's command path. A child that
  // never used the context leaves the parent's session alone (its device's threads and command
  // path are the parent's) and releases only what libibverbs gave this process.
  if (c->owner.load(std::memory_order_acquire) == getpid()) {
    if (EventThread* events = c->session->device().events()) events->RemoveAsyncSink(context);
    c->session->device().StopServing(context);
    delete c->session;  // the last session on the device tears the driver down and stops it
  }
  c->session = nullptr;
  verbs_uninit_context(&c->vctx);  // closes cmd_fd and async_fd
  std::free(c);
}

// No flow steering in the software ConnectX's engine (libmlx5's mlx5_create_flow builds the
// steering rule through DEVX/the kernel): EOPNOTSUPP, as libibverbs' own answer without the op,
// with the line that names it.
ibv_flow* CreateFlow(ibv_qp*, ibv_flow_attr*) {
  log::Missing("ibv_create_flow", "flow steering");
  errno = EOPNOTSUPP;
  return nullptr;
}

const verbs_context_ops kContextOps = [] {
  verbs_context_ops ops{};
  // The calls.h entry points have exactly these signatures: the driver's objects are the
  // verbs objects libibverbs hands to the application. The hot paths (post, poll, arm) go
  // straight to the rings: no check of the process there, which would cost a syscall.
  ops.alloc_dm = ThisProcess<driver::verbs::alloc_dm>::Call;
  ops.alloc_mw = ThisProcess<driver::verbs::alloc_mw>::Call;
  ops.alloc_parent_domain = ThisProcess<driver::verbs::alloc_parent_domain>::Call;
  ops.alloc_pd = ThisProcess<driver::verbs::alloc_pd>::Call;
  ops.alloc_td = ThisProcess<driver::verbs::alloc_td>::Call;
  ops.bind_mw = ThisProcess<driver::verbs::bind_mw>::Call;
  ops.cq_event = driver::rings::CqEvent;
  ops.create_ah = ThisProcess<driver::verbs::create_ah>::Call;
  ops.create_cq = ThisProcess<driver::verbs::create_cq>::Call;
  ops.create_cq_ex = ThisProcess<driver::verbs::create_cq_ex>::Call;
  ops.create_flow = CreateFlow;
  ops.create_qp = ThisProcess<driver::verbs::create_qp>::Call;
  ops.create_qp_ex = ThisProcess<driver::verbs::create_qp_ex>::Call;
  ops.create_srq = ThisProcess<driver::verbs::create_srq>::Call;
  ops.create_srq_ex = ThisProcess<driver::verbs::create_srq_ex>::Call;
  ops.close_xrcd = ThisProcess<driver::verbs::close_xrcd>::Call;
  ops.get_srq_num = ThisProcess<driver::verbs::get_srq_num>::Call;
  ops.open_xrcd = ThisProcess<driver::verbs::open_xrcd>::Call;
  ops.dealloc_mw = ThisProcess<driver::verbs::dealloc_mw>::Call;
  ops.dealloc_pd = ThisProcess<driver::verbs::dealloc_pd>::Call;  // parent domains too
  ops.dealloc_td = ThisProcess<driver::verbs::dealloc_td>::Call;
  ops.destroy_ah = ThisProcess<driver::verbs::destroy_ah>::Call;
  ops.destroy_cq = ThisProcess<driver::verbs::destroy_cq>::Call;
  ops.destroy_qp = ThisProcess<driver::verbs::destroy_qp>::Call;
  ops.destroy_srq = ThisProcess<driver::verbs::destroy_srq>::Call;
  ops.dereg_mr = ThisProcess<DeregMr>::Call;
  ops.free_context = FreeContext;
  ops.free_dm = ThisProcess<driver::verbs::free_dm>::Call;
  ops.import_dm = ThisProcess<driver::verbs::import_dm>::Call;
  ops.import_mr = ThisProcess<driver::verbs::import_mr>::Call;
  ops.import_pd = ThisProcess<driver::verbs::import_pd>::Call;
  ops.unimport_dm = ThisProcess<driver::verbs::unimport_dm>::Call;
  ops.unimport_mr = ThisProcess<driver::verbs::unimport_mr>::Call;
  ops.unimport_pd = ThisProcess<driver::verbs::unimport_pd>::Call;
  ops.modify_qp = ThisProcess<driver::verbs::modify_qp>::Call;
  ops.modify_srq = ThisProcess<driver::verbs::modify_srq>::Call;
  ops.poll_cq = driver::rings::PollCq;
  ops.post_recv = driver::rings::PostRecv;
  ops.post_send = driver::rings::PostSend;
  ops.post_srq_recv = driver::rings::PostSrqRecv;
  ops.query_device_ex = QueryDeviceEx;
  ops.query_port = QueryPort;
  // Only the process the context serves reads its device's clock: a forked child of an
  // in-process device has no device running (ENODEV), a daemon's client child its own session.
  ops.query_rt_values = ThisProcess<QueryRtValues>::Call;
  ops.query_qp = ThisProcess<driver::verbs::query_qp>::Call;
  ops.query_srq = ThisProcess<driver::verbs::query_srq>::Call;
  ops.reg_dm_mr = ThisProcess<driver::verbs::reg_dm_mr>::Call;
  ops.reg_mr = ThisProcess<RegMr>::Call;
  ops.req_notify_cq = driver::rings::ReqNotifyCq;
  ops.rereg_mr = ThisProcess<ReregMr>::Call;
  ops.resize_cq = ThisProcess<driver::verbs::resize_cq>::Call;
  ops.modify_cq = ThisProcess<driver::verbs::modify_cq>::Call;
  return ops;
}();

// ---- the contexts of this process, for ibv_import_device ----
//
// A context's command fd is its own open of /dev/null (AllocContext), so a dup of it names that
// context alone: kcmp(KCMP_FILE) tells which context an imported fd was duplicated from.

std::mutex& ContextsMu() {
  static std::mutex mu;
  return mu;
}
std::vector<OnchipContext*>& Contexts() {
  static auto* contexts = new std::vector<OnchipContext*>;
  return *contexts;
}

void Enlist(OnchipContext* c) {
  std::lock_guard lock(ContextsMu());
  Contexts().push_back(c);
}

void Delist(OnchipContext* c) {
  std::lock_guard lock(ContextsMu());
  std::erase(Contexts(), c);
}

// The live context whose command fd `fd` duplicates, or null.
OnchipContext* ContextOfCommandFd(int fd) {
  const pid_t self = getpid();
  std::lock_guard lock(ContextsMu());
  for (OnchipContext* c : Contexts())
    if (syscall(SYS_kcmp, self, self, KCMP_FILE, c->vctx.context.cmd_fd, fd) == 0) return c;
  return nullptr;
}

uint64_t NewFile() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// ---- device ops ----

// Fills a context libibverbs allocated around `session`: its device serves it, its async events
// go to the session's pipe.
void StartContext(OnchipContext* c, std::unique_ptr<Session> session, const Identity& id,
                  uint64_t file) {
  c->session = session.release();
  c->file = file;
  // Objects the driver creates point at this context, the one libibverbs dispatches through.
  c->session->device().Serve(&c->vctx.context, c->file);
  c->id = id;
  c->owner.store(getpid(), std::memory_order_release);
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
  Enlist(c);
}

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
    log::Say(log::Level::kWarn, "onchip: cannot open %s: %s", ibdev->name,
             session.error().describe().c_str());
    verbs_uninit_context(&c->vctx);
    std::free(c);
    errno = session.error().errno_value();
    return nullptr;
  }
  StartContext(c, std::move(*session), reinterpret_cast<const OnchipDevice*>(ibdev)->id, NewFile());
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
  d->vdev.core_support = ibverbs_abi::kCoreSupportOptionalMrAccess;
  return &d->vdev;
}

void UninitDevice(verbs_device* vdev) { delete reinterpret_cast<OnchipDevice*>(vdev); }

const verbs_match_ent kMatchTable[] = {
    {.driver_data = nullptr, .u = {.modalias = "onchip:*"}, .vendor = 0, .device = 0,
     .kind = ibverbs_abi::kMatchModalias},
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
    .import_context = nullptr,  // ibv_import_device is interposed: see ImportDevice
    .alloc_device = AllocDevice,
    .uninit_device = UninitDevice,
};

__attribute__((constructor)) void RegisterProvider() {
  verbs_register_driver_34(&kDeviceOps);
  log::Say(log::Level::kDebug, "onchip: provider libonchip-rdmav34.so %s registered",
           log::Version());
  pthread_atfork(HoldForFork, ReleaseAfterFork, ReleaseAfterFork);
}

}  // namespace

int ServeThisProcess(ibv_context* context) { return ServeThisProcess(From(context)); }

ibv_context* ImportDevice(int cmd_fd, bool* ours) {
  OnchipContext* original = ContextOfCommandFd(cmd_fd);
  *ours = original != nullptr;
  if (original == nullptr) return nullptr;
  if (const int e = ServeThisProcess(original)) {
    errno = e;
    return nullptr;
  }
  // A context of its own (libibverbs' open: its lib ops, a session on the same device, its own
  // async_fd), then made a face of the original's file: the imported fd becomes its command fd.
  ibv_context* imported = ibv_open_device(original->vctx.context.device);
  if (imported == nullptr) return nullptr;
  OnchipContext* c = From(imported);
  c->file = original->file;
  c->session->device().Serve(imported, c->file);
  close(imported->cmd_fd);
  imported->cmd_fd = cmd_fd;
  return imported;
}

bool IsOnchipContext(const ibv_context* context) {
  return context != nullptr && IsOnchipDevice(context->device);
}

bool IsOnchipDevice(const ibv_device* device) {
  // Every device libibverbs 44 lists is a verbs_device; ours carry kDeviceOps.
  return device != nullptr && reinterpret_cast<const verbs_device*>(device)->ops == &kDeviceOps;
}

int DvQueryDevice(ibv_context* context, mlx5dv_context* out) {
  if (out == nullptr) return EINVAL;
  DvAttributes(From(context)->session->device(), out);
  return 0;
}

}  // namespace onchip::driver::verbs
