// Typed access to mlx5 PRM layouts.
//
// The PRM describes every command, context and segment as a big-endian bit layout: bit 0 is the
// most significant bit of the first dword, a field is (bit offset, bit width). mlx5_ifc.h spells
// the same layouts as `struct mlx5_ifc_<name>_bits`. Here each layout is a class template
// `<name>_bits<Base>` whose members are compile-time descriptors, and `<name>` is the layout at
// offset 0, so code reads like the PRM:
//
//   prm::Message<prm::alloc_memic_in> in;
//   in.set(prm::alloc_memic_in::opcode, prm::ALLOC_MEMIC)
//     .set(prm::alloc_memic_in::range_size, size)
//     .set(prm::alloc_memic_in::log_memic_addr_alignment, log_align);
//   in.set(prm::create_mkey_in::memory_key_mkey_entry.pd, pd);   // nested layout, absolute offset
//   in.set(prm::manage_pages_in::pas[i], page_addr);               // array element
//
// Guarantees:
//   - a field's width is checked at compile time (1..32 bits inside one dword, or 64 bits on a
//     dword boundary: the PRM has no other shapes);
//   - a value that does not fit its field is refused, never truncated (mlx5_ifc's MLX5_SET masks
//     silently): the message records the first refused field and ok() turns false;
//   - a field outside a fixed-size message is a compile error; outside a runtime-sized buffer,
//     set() refuses it and get() aborts (callers check lengths before they read, as firmware does).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace onchip::prm {

// A string usable as a template argument: the PRM name of a field ("mkc.access_mode_1_0").
template <std::size_t N>
struct Name {
  char chars[N]{};
  constexpr Name(const char (&s)[N]) {  // NOLINT: implicit from a literal by design
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }
  constexpr std::string_view view() const { return {chars, N - 1}; }
};

// A scalar field at a fixed bit offset.
template <std::size_t Offset, std::size_t Width, Name N>
struct Field {
  static_assert(Width >= 1 && Width <= 64, "PRM scalar fields are 1..64 bits");
  static_assert(Width == 64 ? Offset % 32 == 0 : Offset % 32 + Width <= 32,
                "a PRM field lies inside one dword, or is 64 bits on a dword boundary");
  using value_type = std::conditional_t<(Width > 32), uint64_t, uint32_t>;
  static constexpr std::size_t bit_offset = Offset;
  static constexpr std::size_t bit_width = Width;
  static constexpr std::string_view name = N.view();
  static constexpr uint64_t max_value = Width == 64 ? ~uint64_t{0} : (uint64_t{1} << Width) - 1;
};

// One element of an array field, at an offset known only at run time.
template <std::size_t Width>
struct Element {
  static_assert(Width == 8 || Width == 16 || Width == 32 || Width == 64,
                "PRM array elements are whole bytes, half-dwords, dwords or qwords");
  using value_type = std::conditional_t<(Width > 32), uint64_t, uint32_t>;
  static constexpr std::size_t bit_width = Width;
  static constexpr uint64_t max_value = Width == 64 ? ~uint64_t{0} : (uint64_t{1} << Width) - 1;
  std::size_t bit_offset;
  std::string_view name;
};

// An array field (`pas[]`, `klm_pas_mtt[]`): Count elements, or open-ended when Count is 0
// (the array runs to the end of the message, as the PRM's trailing arrays do).
template <std::size_t Offset, std::size_t ElementWidth, std::size_t Count, Name N>
struct Array {
  static constexpr std::size_t bit_offset = Offset;
  static constexpr std::size_t element_width = ElementWidth;
  static constexpr std::size_t count = Count;
  static constexpr std::string_view name = N.view();
  constexpr Element<ElementWidth> operator[](std::size_t i) const {
    return {Offset + i * ElementWidth, name};
  }
};

// An opaque, byte-aligned region: a union (query_hca_cap_out.capability) or a byte blob
// (cmd_queue_entry.command_input_inline_data). Read it as a nested layout with bytes().
template <std::size_t Offset, std::size_t Width, Name N>
struct Region {
  static_assert(Offset % 8 == 0 && Width % 8 == 0, "regions are byte-aligned");
  static constexpr std::size_t bit_offset = Offset;
  static constexpr std::size_t bit_width = Width;
  static constexpr std::size_t byte_offset = Offset / 8;
  static constexpr std::size_t byte_size = Width / 8;
  static constexpr std::string_view name = N.view();
};

// Fields whose offset is part of the type: everything but array elements.
template <class F>
inline constexpr bool kIsElement = false;
template <std::size_t W>
inline constexpr bool kIsElement<Element<W>> = true;
template <class F>
concept FixedOffset = !kIsElement<F>;

template <class L>
inline constexpr std::size_t size_bytes = L::size_bits / 8;

// Bits the PRM reserves in a layout; firmware rejects a command that sets any of them.
struct ReservedBits {
  std::size_t bit_offset;
  std::size_t bit_width;
};

namespace detail {

inline uint32_t LoadBe32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return std::byteswap(v);
}
inline void StoreBe32(std::byte* p, uint32_t v) {
  v = std::byteswap(v);
  std::memcpy(p, &v, 4);
}

// Reads `width` bits at `offset`; the caller has checked bounds and shape.
inline uint64_t GetBits(const std::byte* base, std::size_t offset, std::size_t width) {
  const std::byte* dw = base + (offset / 32) * 4;
  if (width == 64) return (uint64_t{LoadBe32(dw)} << 32) | LoadBe32(dw + 4);
  if (width % 8 == 0 && offset % 8 == 0 && width < 32) {
    // Byte-aligned sub-dword fields (array elements) stand alone: never touch their neighbours'
    // bytes, which may lie past the end of the buffer.
    uint64_t v = 0;
    for (std::size_t i = 0; i < width / 8; ++i)
      v = (v << 8) | std::to_integer<uint64_t>(base[offset / 8 + i]);
    return v;
  }
  const std::size_t shift = 32 - (offset % 32) - width;
  const uint32_t mask = width == 32 ? ~0u : ((1u << width) - 1);
  return (LoadBe32(dw) >> shift) & mask;
}

inline void SetBits(std::byte* base, std::size_t offset, std::size_t width, uint64_t v) {
  std::byte* dw = base + (offset / 32) * 4;
  if (width == 64) {
    StoreBe32(dw, static_cast<uint32_t>(v >> 32));
    StoreBe32(dw + 4, static_cast<uint32_t>(v));
    return;
  }
  if (width % 8 == 0 && offset % 8 == 0 && width < 32) {
    for (std::size_t i = width / 8; i-- > 0; v >>= 8)
      base[offset / 8 + i] = static_cast<std::byte>(v & 0xff);
    return;
  }
  const std::size_t shift = 32 - (offset % 32) - width;
  const uint32_t mask = width == 32 ? ~0u : ((1u << width) - 1);
  uint32_t word = LoadBe32(dw);
  word = (word & ~(mask << shift)) | ((static_cast<uint32_t>(v) & mask) << shift);
  StoreBe32(dw, word);
}

inline std::size_t EndByte(std::size_t offset, std::size_t width) {
  if (width % 8 == 0 && offset % 8 == 0 && width < 32) return (offset + width) / 8;
  return (offset / 32) * 4 + (width == 64 ? 8 : 4);
}

[[noreturn]] void ReadOutOfBounds(std::string_view name, std::size_t end, std::size_t size);

}  // namespace detail

// A mutable view of PRM bytes of run-time length, with the sticky refusal described above.
class Bits {
 public:
  Bits() = default;
  explicit Bits(std::span<std::byte> bytes) : bytes_(bytes) {}

  template <class F>
  Bits& set(F field, uint64_t value) {
    const std::size_t end = detail::EndByte(field.bit_offset, F::bit_width);
    if (value > F::max_value || end > bytes_.size()) {
      if (refused_.empty()) refused_ = field.name;
      return *this;
    }
    detail::SetBits(bytes_.data(), field.bit_offset, F::bit_width, value);
    return *this;
  }

  template <class F>
  typename F::value_type get(F field) const {
    return Bits::Read(std::span<const std::byte>(bytes_), field);
  }

  template <class F>
  static typename F::value_type Read(std::span<const std::byte> bytes, F field) {
    const std::size_t end = detail::EndByte(field.bit_offset, F::bit_width);
    if (end > bytes.size()) detail::ReadOutOfBounds(field.name, end, bytes.size());
    return static_cast<typename F::value_type>(
        detail::GetBits(bytes.data(), field.bit_offset, F::bit_width));
  }

  // The bytes of a region (nested layout, union or blob); empty if the buffer is too short.
  template <class R>
  std::span<std::byte> region(R) const {
    if (R::byte_offset + R::byte_size > bytes_.size()) return {};
    return bytes_.subspan(R::byte_offset, R::byte_size);
  }

  // True until a set() was refused; refused() names the first refused field.
  bool ok() const { return refused_.empty(); }
  std::string_view refused() const { return refused_; }

  std::span<std::byte> bytes() const { return bytes_; }

 private:
  std::span<std::byte> bytes_;
  std::string_view refused_;
};

// Where a scalar field sits, as a value (a table row cannot hold the Field types themselves):
// SpotOf(prm::alloc_pd_out::pd). Read and written with GetAt and SetAt, which refuse a field the
// bytes do not hold.
struct FieldSpot {
  uint16_t bit_offset = 0;
  uint8_t bit_width = 0;  // 0: no such field
  constexpr bool present() const { return bit_width != 0; }
};

template <class F>
constexpr FieldSpot SpotOf(F) {
  return {static_cast<uint16_t>(F::bit_offset), static_cast<uint8_t>(F::bit_width)};
}

// The field at `spot`, or nullopt when `bytes` end before it.
inline std::optional<uint64_t> GetAt(std::span<const std::byte> bytes, FieldSpot spot) {
  if (detail::EndByte(spot.bit_offset, spot.bit_width) > bytes.size()) return std::nullopt;
  return detail::GetBits(bytes.data(), spot.bit_offset, spot.bit_width);
}
// Stores `value` at `spot`; false (nothing stored) when `bytes` end before it.
inline bool SetAt(std::span<std::byte> bytes, FieldSpot spot, uint64_t value) {
  if (detail::EndByte(spot.bit_offset, spot.bit_width) > bytes.size()) return false;
  detail::SetBits(bytes.data(), spot.bit_offset, spot.bit_width, value);
  return true;
}

// Reads a field from const bytes: prm::Get(out, prm::alloc_pd_out::pd).
template <class F>
typename F::value_type Get(std::span<const std::byte> bytes, F field) {
  return Bits::Read(bytes, field);
}

// A zero-initialised message of layout L plus `extra` trailing bytes (for open-ended arrays).
template <class L>
class Message {
 public:
  Message() : storage_(size_bytes<L>), bits_(storage_) {}
  explicit Message(std::size_t extra_bytes)
      : storage_(size_bytes<L> + extra_bytes), bits_(storage_) {}
  Message(Message&&) = default;  // the vector's buffer moves, so the view stays valid
  Message& operator=(Message&&) = default;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  template <class F>
  Message& set(F field, uint64_t value) {
    if constexpr (FixedOffset<F>)
      static_assert(F::bit_offset + F::bit_width <= L::size_bits, "field outside this layout");
    bits_.set(field, value);
    return *this;
  }
  template <class F>
  typename F::value_type get(F field) const {
    return bits_.get(field);
  }
  template <class R>
  std::span<std::byte> region(R r) {
    return bits_.region(r);
  }

  bool ok() const { return bits_.ok(); }
  std::string_view refused() const { return bits_.refused(); }
  std::span<std::byte> bytes() { return storage_; }
  std::span<const std::byte> bytes() const { return storage_; }
  std::size_t size() const { return storage_.size(); }

 private:
  std::vector<std::byte> storage_;
  Bits bits_;
};

// A command's input: layout L zeroed (plus `extra` trailing bytes) with its opcode and op_mod
// set, the two fields every mlx5 command input begins with.
template <class L>
Message<L> CommandIn(uint16_t opcode, uint16_t op_mod = 0, std::size_t extra = 0) {
  Message<L> m(extra);
  m.set(L::opcode, opcode).set(L::op_mod, op_mod);
  return m;
}

}  // namespace onchip::prm
