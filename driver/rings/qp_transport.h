// The transports a QP's send queue serves, as the data path tells them apart.
#pragma once

#include <cstdint>

namespace onchip::driver::rings {

enum class QpTransport : uint8_t { kRc, kUc, kUd, kRaw, kXrc };

}  // namespace onchip::driver::rings
