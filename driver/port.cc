#include "driver/port.h"

#include "driver/cmd/run.h"
#include "uapi/prm/eqe.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

Result<bool> QueryLinkUp(Device& device) {
  using In = prm::query_vport_state_in;
  prm::Message<In> in;
  in.set(In::opcode, prm::QUERY_VPORT_STATE);  // op_mod 0: this function's NIC vport
  ONCHIP_TRY(auto out, cmd::Run<prm::query_vport_state_out>(device.commander(), in));
  return out.get(prm::query_vport_state_out::state) == prm::MLX5_VPORT_STATE_UP;
}

}  // namespace onchip::driver
