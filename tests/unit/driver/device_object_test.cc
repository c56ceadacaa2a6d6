// DeviceObject: a firmware object owned while it is being created. Dropping it sends its
// destroy exactly once; Commit() hands it on without a command; a move hands it over.
#include "driver/device_object.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::driver {
namespace {

// Records every command's opcode and the PD number it names; refuses when told to.
class RecordingCommander : public cmd::Commander {
 public:
  Result<void> Exec(std::span<const std::byte> in, std::span<std::byte> out) override {
    prm::Message<prm::dealloc_pd_in> seen;
    std::memcpy(seen.bytes().data(), in.data(), std::min(in.size(), seen.size()));
    sent.push_back({static_cast<uint16_t>(seen.get(prm::dealloc_pd_in::opcode)),
                    static_cast<uint32_t>(seen.get(prm::dealloc_pd_in::pd))});
    out_bytes = out.size();
    if (refuse) return Fail(EBUSY, "refused");
    return {};
  }
  struct Sent {
    uint16_t opcode;
    uint32_t id;
    bool operator==(const Sent&) const = default;
  };
  std::vector<Sent> sent;
  std::size_t out_bytes = 0;
  bool refuse = false;
};

DeviceObject Pd(cmd::Commander& c, uint32_t pdn) {
  prm::Message<prm::dealloc_pd_in> in;
  in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, pdn);
  return DeviceObject::Owning<prm::dealloc_pd_out>(c, pdn, in);
}

using Sent = RecordingCommander::Sent;

TEST(DeviceObject, DroppedItSendsItsDestroyOnce) {
  RecordingCommander c;
  {
    DeviceObject pd = Pd(c, 7);
    EXPECT_TRUE(pd.owned());
    EXPECT_EQ(pd.id(), 7u);
    EXPECT_TRUE(c.sent.empty());
  }
  EXPECT_EQ(c.sent, (std::vector<Sent>{{prm::DEALLOC_PD, 7}}));
  EXPECT_EQ(c.out_bytes, prm::size_bytes<prm::dealloc_pd_out>);
}

TEST(DeviceObject, CommittedItSendsNothing) {
  RecordingCommander c;
  {
    DeviceObject pd = Pd(c, 9);
    EXPECT_EQ(pd.Commit(), 9u);
    EXPECT_FALSE(pd.owned());
  }
  EXPECT_TRUE(c.sent.empty());
}

TEST(DeviceObject, AMoveHandsItOverAndAnAssignmentGivesBackWhatWasHeld) {
  RecordingCommander c;
  DeviceObject a = Pd(c, 1);
  DeviceObject b = std::move(a);
  EXPECT_FALSE(a.owned());
  EXPECT_TRUE(b.owned());
  EXPECT_TRUE(c.sent.empty());
  b = Pd(c, 2);  // 1 is given back, 2 is held
  EXPECT_EQ(c.sent, (std::vector<Sent>{{prm::DEALLOC_PD, 1}}));
  b = DeviceObject();
  EXPECT_EQ(c.sent, (std::vector<Sent>{{prm::DEALLOC_PD, 1}, {prm::DEALLOC_PD, 2}}));
}

TEST(DeviceObject, DestroyReportsARefusalAndOwnsNothingAfterwards) {
  RecordingCommander c;
  c.refuse = true;
  {
    DeviceObject pd = Pd(c, 3);
    auto destroyed = pd.Destroy();
    ASSERT_FALSE(destroyed);
    EXPECT_EQ(destroyed.error().errno_value(), EBUSY);
    EXPECT_FALSE(pd.owned());
  }
  EXPECT_EQ(c.sent.size(), 1u) << "a refused destroy is not sent again by the destructor";
}

// Members are destroyed last first: objects declared in creation order go back in reverse.
TEST(DeviceObject, ObjectsDeclaredInCreationOrderGoBackLastMadeFirst) {
  RecordingCommander c;
  struct Made {
    DeviceObject first, second, third;
  };
  {
    Made m{Pd(c, 1), Pd(c, 2), Pd(c, 3)};
  }
  EXPECT_EQ(c.sent, (std::vector<Sent>{{prm::DEALLOC_PD, 3}, {prm::DEALLOC_PD, 2},
                                       {prm::DEALLOC_PD, 1}}));
}

}  // namespace
}  // namespace onchip::driver
