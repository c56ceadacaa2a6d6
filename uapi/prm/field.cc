#include "uapi/prm/field.h"

#include <cstdio>

namespace onchip::prm::detail {

void ReadOutOfBounds(std::string_view name, std::size_t end, std::size_t size) {
  std::fprintf(stderr, "onchip: PRM read of %.*s needs %zu bytes, buffer has %zu\n",
               static_cast<int>(name.size()), name.data(), end, size);
  std::abort();
}

}  // namespace onchip::prm::detail
