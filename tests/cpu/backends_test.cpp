#include "cpu/backends.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flopwatt::cpu {
namespace {

TEST(CpuBackends, AllFourInFixedOrderWithHonestAvailability) {
  const auto backends = make_backends();
  std::vector<std::string> names;
  for (const auto& b : backends) {
    names.push_back(b->name());
    const Availability a = b->availability();
    // Unavailable must say why; available must not carry a stale reason.
    EXPECT_EQ(a.ok, a.reason.empty()) << b->name() << ": " << a.reason;
    EXPECT_FALSE(b->simulated());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cpu:reference", "cpu:llmc", "cpu:openblas", "cpu:onednn"}));
}

}  // namespace
}  // namespace flopwatt::cpu
