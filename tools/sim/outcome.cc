#include "tools/sim/outcome.h"

namespace onchip::sim {

bool BitsZero(std::span<const std::byte> bytes, std::size_t bit_offset, std::size_t width) {
  std::size_t bit = bit_offset;
  const std::size_t end = bit_offset + width;
  if (end > bytes.size() * 8) return false;
  while (bit < end) {
    const std::size_t byte = bit / 8;
    const std::size_t in_byte = bit % 8;
    if (in_byte == 0 && end - bit >= 8) {
      if (bytes[byte] != std::byte{0}) return false;
      bit += 8;
      continue;
    }
    // PRM bit 0 is the most significant bit of byte 0.
    if ((std::to_integer<unsigned>(bytes[byte]) >> (7 - in_byte)) & 1u) return false;
    ++bit;
  }
  return true;
}

}  // namespace onchip::sim
