#include "driver/mkey.h"

#include "driver/cmd/run.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

Result<void> DestroyMkey(cmd::Commander& commander, uint32_t mkey_index) {
  prm::Message<prm::destroy_mkey_in> in;
  in.set(prm::destroy_mkey_in::opcode, prm::DESTROY_MKEY)
      .set(prm::destroy_mkey_in::mkey_index, mkey_index);
  ONCHIP_TRY(auto out, cmd::Run<prm::destroy_mkey_out>(commander, in));
  (void)out;
  return {};
}

void SetAccessModeNoQp(prm::Message<prm::create_mkey_in>& in, uint32_t access_mode) {
  constexpr auto mkc = prm::create_mkey_in::memory_key_mkey_entry;
  in.set(mkc.access_mode_1_0, access_mode & 0x3)
      .set(mkc.access_mode_4_2, access_mode >> 2)
      .set(mkc.qpn, prm::MLX5_MKEY_NO_QPN);
}

}  // namespace onchip::driver
