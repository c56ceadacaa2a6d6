#include "uapi/prm/field.h"

#include <cstdlib>

#include "log/log.h"

namespace onchip::prm::detail {

void ReadOutOfBounds(std::string_view name, std::size_t end, std::size_t size) {
  log::Fatal("onchip: PRM read of %.*s needs %zu bytes, buffer has %zu",
             static_cast<int>(name.size()), name.data(), end, size);
  std::abort();
}

}  // namespace onchip::prm::detail
