// The physical port as the firmware reports it: QUERY_VPORT_STATE of this function's NIC vport,
// whose state is the port's link (what mlx5_ib reports as a RoCE port's state). A link that goes
// down or up also raises PORT_CHANGE, which the event thread turns into IBV_EVENT_PORT_ERR or
// IBV_EVENT_PORT_ACTIVE (driver/events.h).
#pragma once

#include "driver/device.h"
#include "uapi/result.h"

namespace onchip::driver {

// True while the link is up; the firmware's errno when the command fails (EIO once the
// function is gone).
Result<bool> QueryLinkUp(Device& device);

}  // namespace onchip::driver
