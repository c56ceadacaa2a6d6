// uapi/sim/syndrome.h, the one table of the software ConnectX's syndromes: every row a distinct
// name and value, each refusal's status one the PRM defines, and the name and status a driver
// or a handler reads back are the row's.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "uapi/cmd_status.h"
#include "uapi/sim/syndrome.h"

namespace onchip::sim {
namespace {

struct Row {
  std::string_view name;
  uint32_t value;
  prm::CommandStatus status;
};

TEST(SyndromeTable, RowsAreDistinctAndRefusalsCarryAPrmStatus) {
  std::set<std::string_view> names;
  std::set<uint32_t> values;
  for (const SyndromeRow& row : kSyndromes) {
    const Row r{row.name, static_cast<uint32_t>(row.syndrome), row.status};
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(names.insert(r.name).second) << "name listed twice";
    EXPECT_TRUE(values.insert(r.value).second) << "value listed twice";
    EXPECT_EQ(SyndromeName(r.value), r.name);
    EXPECT_EQ(SyndromeStatus(row.syndrome), r.status);
    if (r.value == 0) {
      EXPECT_EQ(r.status, prm::CommandStatus::OK);
      continue;
    }
    EXPECT_EQ(r.value >> 24, 0x51u) << "a software ConnectX syndrome carries the 0x51 prefix";
    EXPECT_NE(r.status, prm::CommandStatus::OK) << "a refusal with status OK";
    EXPECT_STRNE(prm::CommandStatusName(static_cast<uint8_t>(r.status)), "UNKNOWN");
  }
  EXPECT_GT(values.size(), 100u);
}

TEST(SyndromeTable, AValueWithoutARowHasNoName) {
  EXPECT_STREQ(SyndromeName(0x12345678), "UNKNOWN");
  EXPECT_STREQ(SyndromeName(static_cast<uint32_t>(Syndrome::MKEY_UNKNOWN)), "MKEY_UNKNOWN");
  EXPECT_EQ(SyndromeStatus(Syndrome::MKEY_UNKNOWN), prm::CommandStatus::BAD_RES_ERR);
  EXPECT_EQ(SyndromeStatus(Syndrome::CQ_RESIZE_OUTSTANDING), prm::CommandStatus::BAD_SIZE_OUTS_CQES_ERR);
}

}  // namespace
}  // namespace onchip::sim
