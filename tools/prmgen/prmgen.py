#!/usr/bin/env python3
"""Generates onchip's typed PRM layouts (uapi/prm/<area>.h) from the PRM field table.

    tools/prmgen/prmgen.py [--table ../shared/reference/prm_fields.tsv]

Inputs: uapi/prm/layouts.cfg (which layouts, grouped by area) and a field table with rows
`struct_name  field_name  bit_offset  bit_width` as extracted from mlx5_ifc.h (nested fields are
`outer.inner`, arrays `name[]` with the element width). Without --table it regenerates from the
project's own copy, uapi/prm/prm_fields.tsv, which it also rewrites with the rows it used.

Outputs, all checked in: one header per area, uapi/prm/registry.cc (every descriptor, for the
cross-check test) and uapi/prm/prm_fields.tsv.
"""
import argparse
import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRM_DIR = os.path.join(ROOT, "uapi", "prm")
CPP_KEYWORDS = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
class compl concept const consteval constexpr constinit const_cast continue decltype default delete
do double dynamic_cast else enum explicit export extern false float for friend goto if inline int
long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast requires return short signed sizeof static static_assert static_cast
struct switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while xor xor_eq""".split())
# Members every generated layout has; a PRM field with the same name gets a trailing underscore.
RESERVED_MEMBERS = {"size_bits", "bit_offset", "reserved_ranges"}

Row = collections.namedtuple("Row", "name offset width")


def read_table(path):
    table = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4 or parts[0] == "struct_name":
                continue
            struct, field, off, width = parts
            table.setdefault(struct, []).append(Row(field, int(off), int(width)))
    return table


def read_config(path):
    areas = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            area, names = line.split(":", 1)
            areas[area.strip()] = names.split()
    return areas


def ident(name):
    name = name.replace("[]", "")
    if name in CPP_KEYWORDS or name in RESERVED_MEMBERS:
        return name + "_"
    if name[0].isdigit():
        return "_" + name
    return name


def size_of(rows):
    for r in rows:
        if r.name == "__size__":
            return r.width
    raise ValueError("no __size__ row")


def children(rows, prefix):
    """Rows directly or deeply under `prefix.` with offsets made relative to the prefix row."""
    base = next(r.offset for r in rows if r.name == prefix)
    out = []
    for r in rows:
        if r.name.startswith(prefix + "."):
            out.append(Row(r.name[len(prefix) + 1:], r.offset - base, r.width))
    return out


def signature(rows):
    return tuple(sorted((r.name, r.offset, r.width) for r in rows if r.name != "__size__"))


class Generator:
    def __init__(self, table):
        self.table = table
        self.by_signature = {}
        for name, rows in table.items():
            if name.startswith("union:"):
                continue
            self.by_signature.setdefault((signature(rows), size_of(rows)), name)
        self.emitted = set()
        self.used = collections.OrderedDict()  # struct -> rows, for the project's table copy

    def nested_type(self, rows, prefix, width):
        """The layout a nested member has: a known PRM struct, else None (generated inline)."""
        sig = signature(children(rows, prefix))
        return self.by_signature.get((sig, width))

    def emit_struct(self, out, name, rows, template_name, qual_name):
        """Emits `template <size_t B> struct template_name`. Returns nothing; appends to out."""
        size = size_of(rows)
        top = [r for r in rows if r.name != "__size__" and "." not in r.name.replace("[]", "")]
        prefixes = {r.name for r in rows if any(x.name.startswith(r.name + ".") for x in rows)}
        pre = []  # inline nested types this struct needs, emitted before it
        members = []
        reserved = []
        seen = set()
        for r in top:
            is_array = r.name.endswith("[]")
            base = r.name[:-2] if is_array else r.name
            member = ident(base)
            if r.name in prefixes:
                known = self.nested_type(rows, r.name, r.width)
                if known:
                    self.emit_layout(out, known)
                    t = "%s_bits<B + 0x%x>" % (known, r.offset)
                else:
                    inner = "%s__%s" % (template_name[:-5], ident(base))
                    self.emit_struct(pre, "%s.%s" % (name, base), [Row("__size__", 0, r.width)] +
                                     children(rows, r.name), inner + "_bits",
                                     "%s.%s" % (qual_name, base))
                    t = "%s_bits<B + 0x%x>" % (inner, r.offset)
                if member in seen:
                    continue
                seen.add(member)
                members.append("  static constexpr %s %s{};" % (t, member))
                continue
            if base.startswith("reserved_at_") or base.startswith("rsvd"):
                reserved.append((r.offset, r.width))
                continue
            if is_array:
                count = 0
                whole = next((x for x in top if x.name == base), None)
                if whole:
                    count = whole.width // r.width
                if r.width not in (8, 16, 32, 64) or r.offset % min(r.width, 32) != 0:
                    members.append("  // %s: array of %d-bit elements, not addressable as scalars" %
                                   (r.name, r.width))
                    continue
                # An array shadows its whole-row descriptor (same name without []), be it a
                # Region or, for a whole row of 32 bits or less, a Field.
                members = [m for m in members if not (
                    m.startswith("  static constexpr Region<") or
                    m.startswith("  static constexpr Field<")) or not m.endswith(" %s{};" % member)]
                seen.add(member)
                members.append('  static constexpr Array<B + 0x%x, %d, %d, "%s.%s"> %s{};' %
                               (r.offset, r.width, count, qual_name, base, member))
                continue
            if member in seen:
                continue
            seen.add(member)
            scalar = (1 <= r.width <= 32 and r.offset % 32 + r.width <= 32) or (
                r.width == 64 and r.offset % 32 == 0)
            if scalar:
                members.append('  static constexpr Field<B + 0x%x, %d, "%s.%s"> %s{};' %
                               (r.offset, r.width, qual_name, base, member))
            elif r.offset % 8 == 0 and r.width % 8 == 0:
                members.append('  static constexpr Region<B + 0x%x, %d, "%s.%s"> %s{};' %
                               (r.offset, r.width, qual_name, base, member))
            else:
                members.append("  // %s: %d bits at %d, neither a scalar nor byte-aligned" %
                               (base, r.width, r.offset))
        out.extend(pre)
        out.append("template <std::size_t B = 0>")
        out.append("struct %s {" % template_name)
        out.append("  static constexpr std::size_t bit_offset = B;")
        out.append("  static constexpr std::size_t size_bits = 0x%x;" % size)
        out.extend(members)
        if reserved:
            out.append("  static constexpr std::array<ReservedBits, %d> reserved_ranges{{" % len(reserved))
            for off, width in reserved:
                out.append("      {B + 0x%x, %d}," % (off, width))
            out.append("  }};")
        else:
            out.append("  static constexpr std::array<ReservedBits, 0> reserved_ranges{};")
        out.append("};")
        out.append("")

    def emit_layout(self, out, name):
        if name in self.emitted:
            return
        if name not in self.table:
            sys.exit("prmgen: %s is not in the field table" % name)
        self.emitted.add(name)
        rows = self.table[name]
        # The project's table (and the registry) leave out what the header cannot address: an
        # array of elements wider than 64 bits (query_hca_vport_gid_out.gid[], 128-bit GIDs),
        # which code reaches as bytes past the layout.
        self.used[name] = [r for r in rows if not (r.name.endswith("[]") and (
            r.width not in (8, 16, 32, 64) or r.offset % min(r.width, 32) != 0))]
        self.emit_struct(out, name, rows, name + "_bits", name)
        out.append("using %s = %s_bits<>;" % (name, name))
        out.append("")


HEADER = """// Generated by tools/prmgen/prmgen.py from uapi/prm/layouts.cfg and the PRM field table.
// Do not edit: change layouts.cfg and regenerate. Names are exactly mlx5_ifc.h's.
// Usage and guarantees: uapi/prm/field.h.
#pragma once

#include <array>
#include <cstddef>

#include "uapi/prm/field.h"
%s
namespace onchip::prm {

"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=os.path.join(PRM_DIR, "prm_fields.tsv"))
    args = ap.parse_args()
    table = read_table(args.table)
    areas = read_config(os.path.join(PRM_DIR, "layouts.cfg"))
    gen = Generator(table)
    headers = []
    owner = {}
    for area, names in areas.items():
        out = []
        before = set(gen.emitted)
        for name in names:
            gen.emit_layout(out, name)
        for name in gen.emitted - before:
            owner[name] = area
        headers.append((area, out))
    # A layout pulled into an earlier area is included from there.
    for area, out in headers:
        deps = sorted({owner[n] for n in owner if owner[n] != area and
                       any(("%s_bits<" % n) in line for line in out)})
        includes = "".join('#include "uapi/prm/%s.h"\n' % d for d in deps)
        with open(os.path.join(PRM_DIR, area + ".h"), "w") as f:
            f.write(HEADER % includes)
            f.write("\n".join(out).rstrip() + "\n\n}  // namespace onchip::prm\n")
    with open(os.path.join(PRM_DIR, "prm_fields.tsv"), "w") as f:
        f.write("struct_name\tfield_name\tbit_offset\tbit_width\n")
        for name, rows in gen.used.items():
            for r in rows:
                f.write("%s\t%s\t%d\t%d\n" % (name, r.name, r.offset, r.width))
    write_registry(gen, areas, owner)
    print("prmgen: %d layouts in %d headers" % (len(gen.used), len(areas)))


def write_registry(gen, areas, owner):
    """registry.cc lists every generated descriptor by walking the layouts at compile time."""
    lines = [
        "// Generated by tools/prmgen/prmgen.py. Every descriptor of every generated layout, read",
        "// back from the compiled types, so the cross-check test sees what the code sees.",
        '#include "uapi/prm/registry.h"',
        "",
    ]
    for area in areas:
        lines.append('#include "uapi/prm/%s.h"' % area)
    lines += ["", "namespace onchip::prm {", "", "const std::vector<FieldInfo>& AllFields() {",
              "  static const std::vector<FieldInfo> fields = [] {",
              "    std::vector<FieldInfo> v;"]
    for name, rows in gen.used.items():
        for r in rows:
            if r.name == "__size__":
                lines.append('    v.push_back({"%s", "__size__", 0, %s::size_bits});' % (name, name))
                continue
            path = r.name.replace("[]", "")
            parts = path.split(".")
            if any(p.startswith("reserved_at_") or p.startswith("rsvd") for p in parts):
                continue
            expr = name + "::" + ".".join(ident(p) for p in parts)
            whole_array = not r.name.endswith("[]") and any(x.name == r.name + "[]" for x in rows)
            fn = "AddWholeArray" if whole_array else "Add"
            lines.append("    %s(v, \"%s\", \"%s\", %s);" % (fn, name, r.name, expr))
    lines += ["    return v;", "  }();", "  return fields;", "}", "", "}  // namespace onchip::prm", ""]
    with open(os.path.join(PRM_DIR, "registry.cc"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
