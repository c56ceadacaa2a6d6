// Cross-checks every generated PRM descriptor against the PRM field table.
//
// Two tables: the project's own copy (uapi/prm/prm_fields.tsv, always present) and, when this
// checkout sits beside ../shared (CI does), the reference table extracted from mlx5_ifc.h. The
// descriptors are read back from the compiled layout types (uapi/prm/registry.cc), so a bad
// offset in a header, a stale generation or a wrong copy of the table all fail here.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "uapi/prm/registry.h"

namespace onchip::prm {
namespace {

using Table = std::map<std::pair<std::string, std::string>, std::pair<size_t, size_t>>;

Table Load(const std::filesystem::path& path) {
  Table table;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string layout, field, offset, width;
    if (!std::getline(row, layout, '\t') || !std::getline(row, field, '\t') ||
        !std::getline(row, offset, '\t') || !std::getline(row, width, '\t'))
      continue;
    if (layout == "struct_name") continue;
    table[{layout, field}] = {std::stoul(offset), std::stoul(width)};
  }
  return table;
}

std::filesystem::path OwnTable() { return "uapi/prm/prm_fields.tsv"; }

// The runfile links to the source tree; the reference table sits beside the checkout.
std::filesystem::path ReferenceTable() {
  if (const char* env = std::getenv("ONCHIP_PRM_REFERENCE")) return env;
  std::error_code ec;
  auto own = std::filesystem::canonical(OwnTable(), ec);
  if (ec) return {};
  return own.parent_path().parent_path().parent_path().parent_path() / "shared" / "reference" /
         "prm_fields.tsv";
}

int CheckAgainst(const Table& table, const char* which) {
  int checked = 0;
  for (const FieldInfo& f : AllFields()) {
    auto it = table.find({std::string(f.layout), std::string(f.field)});
    if (it == table.end()) {
      ADD_FAILURE() << f.layout << "." << f.field << " is not in the " << which << " table";
      continue;
    }
    EXPECT_EQ(it->second.first, f.bit_offset) << f.layout << "." << f.field << " offset";
    EXPECT_EQ(it->second.second, f.bit_width) << f.layout << "." << f.field << " width";
    ++checked;
  }
  return checked;
}

TEST(PrmTable, EveryDescriptorMatchesTheProjectsTable) {
  Table own = Load(OwnTable());
  ASSERT_FALSE(own.empty()) << "cannot read " << OwnTable();
  int checked = CheckAgainst(own, "project's");
  std::printf("checked %d descriptors against %s\n", checked, OwnTable().c_str());
  EXPECT_EQ(checked, static_cast<int>(AllFields().size()));
}

TEST(PrmTable, EveryDescriptorMatchesTheReferenceTable) {
  auto path = ReferenceTable();
  if (path.empty() || !std::filesystem::exists(path))
    GTEST_SKIP() << "no reference PRM table beside this checkout (../shared/reference); "
                    "set ONCHIP_PRM_REFERENCE to check against one";
  Table reference = Load(path);
  ASSERT_FALSE(reference.empty()) << "cannot read " << path;
  int checked = CheckAgainst(reference, "reference");
  std::printf("checked %d descriptors against %s\n", checked, path.c_str());
  EXPECT_EQ(checked, static_cast<int>(AllFields().size()));
}

// Every named, non-reserved row of the project's table is reachable from code.
TEST(PrmTable, EveryTableRowHasADescriptor) {
  Table own = Load(OwnTable());
  std::map<std::pair<std::string, std::string>, bool> generated;
  for (const FieldInfo& f : AllFields()) generated[{std::string(f.layout), std::string(f.field)}];
  int missing = 0;
  for (const auto& [key, value] : own) {
    const std::string& field = key.second;
    if (field.find("reserved_at_") != std::string::npos || field.find("rsvd") != std::string::npos)
      continue;
    if (!generated.count(key)) {
      ++missing;
      std::printf("no descriptor: %s.%s (%zu bits at %zu)\n", key.first.c_str(), field.c_str(),
                  value.second, value.first);
    }
  }
  EXPECT_EQ(missing, 0);
}

}  // namespace
}  // namespace onchip::prm
