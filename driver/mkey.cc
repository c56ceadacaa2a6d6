#include "driver/mkey.h"

#include "driver/cmd/run.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

Result<void> DestroyMkey(driver::cmd::Commander& commander, uint32_t mkey_index) {
  prm::Message<prm::destroy_mkey_in> in;
  in.set(prm::destroy_mkey_in::opcode, prm::DESTROY_MKEY)
      .set(prm::destroy_mkey_in::mkey_index, mkey_index);
  ONCHIP_TRY(auto out, driver::cmd::Run<prm::destroy_mkey_out>(commander, in));
  (void)out;
  return {};
}

}  // namespace onchip::driver
