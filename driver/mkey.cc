#include "driver/mkey.h"

#include "uapi/prm/mkey.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

DeviceObject MkeyOnDevice(cmd::Commander& commander, uint32_t mkey_index) {
  prm::Message<prm::destroy_mkey_in> in;
  in.set(prm::destroy_mkey_in::opcode, prm::DESTROY_MKEY)
      .set(prm::destroy_mkey_in::mkey_index, mkey_index);
  return DeviceObject::Owning<prm::destroy_mkey_out>(commander, mkey_index, in);
}

Result<void> DestroyMkey(cmd::Commander& commander, uint32_t mkey_index) {
  return MkeyOnDevice(commander, mkey_index).Destroy();
}

void SetAccessModeNoQp(prm::Message<prm::create_mkey_in>& in, uint32_t access_mode) {
  constexpr auto mkc = prm::create_mkey_in::memory_key_mkey_entry;
  in.set(mkc.access_mode_1_0, access_mode & 0x3)
      .set(mkc.access_mode_4_2, access_mode >> 2)
      .set(mkc.qpn, prm::MLX5_MKEY_NO_QPN);
}

}  // namespace onchip::driver
