#include "driver/uar.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "driver/copy_kernels.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/uar_page.h"

namespace onchip::driver {

namespace {

uint32_t BfRegSize(const Caps& caps) {
  const prm::Bits general = caps.cur(prm::CAP_GENERAL);
  if (!general.get(prm::cmd_hca_cap::bf)) return 0;
  return uint32_t{1} << general.get(prm::cmd_hca_cap::log_bf_reg_size);
}

}  // namespace

Uars::Uars(cmd::Commander& commander, bus::Bus& bus, const Caps& caps)
    : commander_(commander), bus_(bus), bf_reg_size_(BfRegSize(caps)) {}

Uars::~Uars() = default;

DeviceObject Uars::UarOnDevice(uint32_t index) {
  prm::Message<prm::dealloc_uar_in> in;
  in.set(prm::dealloc_uar_in::opcode, prm::DEALLOC_UAR).set(prm::dealloc_uar_in::uar, index);
  return DeviceObject::Owning<prm::dealloc_uar_out>(commander_, index, in);
}

Result<DeviceObject> Uars::AllocUar() {
  prm::Message<prm::alloc_uar_in> in;
  in.set(prm::alloc_uar_in::opcode, prm::ALLOC_UAR);
  ONCHIP_TRY(auto out, cmd::Run<prm::alloc_uar_out>(commander_, in));
  return UarOnDevice(static_cast<uint32_t>(out.get(prm::alloc_uar_out::uar)));
}

Result<void> Uars::DeallocUar(uint32_t index) { return UarOnDevice(index).Destroy(); }

Result<std::byte*> Uars::Page(uint32_t index) {
  return bus_.Bar0Window(prm::UarPageOffset(index), prm::kUarPageBytes);
}

Result<std::unique_ptr<Bfreg>> Uars::AllocDedicated() {
  if (!blueflame()) return Fail(EOPNOTSUPP, "uar: the device has no BlueFlame registers");
  if (!prm::BfregsFit(1, bf_reg_size_))
    return Fail(EINVAL, "uar: BlueFlame register does not fit the UAR page");
  ONCHIP_TRY(DeviceObject uar, AllocUar());
  ONCHIP_TRY(std::byte* page, Page(uar.id()));  // a failure gives the UAR back
  auto bf = std::make_unique<Bfreg>();
  bf->uar_index = uar.Commit();
  bf->reg = page + prm::BfregOffset(0, bf_reg_size_);
  bf->buf_size = prm::BfregHalfBytes(bf_reg_size_);
  bf->blueflame = true;
  bf->need_lock = false;
  bf->line64 = ChooseCopyKernels(bus_).blueflame->line64;
  return bf;
}

Result<void> Uars::FreeDedicated(std::unique_ptr<Bfreg>& bfreg) {
  if (!bfreg) return {};
  ONCHIP_CHECK(DeallocUar(bfreg->uar_index));
  bfreg.reset();
  return {};
}

Result<Bfreg*> Uars::Shared() {
  std::lock_guard lock(shared_mu_);
  if (shared_) return shared_.get();
  ONCHIP_TRY(DeviceObject uar, AllocUar());
  ONCHIP_TRY(std::byte* page, Page(uar.id()));  // a failure gives the UAR back
  shared_ = std::make_unique<Bfreg>();
  shared_->uar_index = uar.Commit();
  shared_->reg = page + prm::BfregOffset(0, bf_reg_size_);
  shared_->buf_size = 0;  // doorbells only: a 64-bit store of the WQE's first 8 bytes
  shared_->blueflame = false;
  shared_->need_lock = true;
  shared_->line64 = ChooseCopyKernels(bus_).blueflame->line64;
  return shared_.get();
}

Result<void> Uars::ReleaseShared() {
  std::lock_guard lock(shared_mu_);
  if (!shared_) return {};
  ONCHIP_CHECK(DeallocUar(shared_->uar_index));
  shared_.reset();
  return {};
}

}  // namespace onchip::driver
