// Every generated PRM descriptor with its name, offset and width, for cross-checking the
// layouts against the PRM field table (tests/unit/uapi/prm_table_test.cc).
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <vector>

#include "uapi/prm/field.h"

namespace onchip::prm {

struct FieldInfo {
  std::string_view layout;  // "create_mkey_in"
  std::string_view field;   // "memory_key_mkey_entry.pd", "pas[]" (element width)
  std::size_t bit_offset;
  std::size_t bit_width;
};

const std::vector<FieldInfo>& AllFields();

namespace detail {
template <class T>
concept HasWidth = requires { T::bit_width; };
template <class T>
concept IsArray = requires { T::element_width; };
}  // namespace detail

// Records a descriptor of any kind: scalar field, region, array (element width), nested layout.
template <class D>
void Add(std::vector<FieldInfo>& v, std::string_view layout, std::string_view field, const D&) {
  if constexpr (detail::IsArray<D>)
    v.push_back({layout, field, D::bit_offset, D::element_width});
  else if constexpr (detail::HasWidth<D>)
    v.push_back({layout, field, D::bit_offset, D::bit_width});
  else
    v.push_back({layout, field, D::bit_offset, D::size_bits});
}

// Records a fixed-size array as one span (the row without `[]` in the PRM table).
template <class A>
void AddWholeArray(std::vector<FieldInfo>& v, std::string_view layout, std::string_view field,
                   const A&) {
  v.push_back({layout, field, A::bit_offset, A::element_width * A::count});
}

}  // namespace onchip::prm
