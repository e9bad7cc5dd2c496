#include "power/net_energy.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace flopwatt::power;

TEST(NetEnergy, BaselineFromWindows) {
  auto b = idle_baseline_from_windows({9.0, 10.0, 11.0});
  EXPECT_DOUBLE_EQ(b.mean_w, 10.0);
  EXPECT_DOUBLE_EQ(b.sd_w, 1.0);
  EXPECT_EQ(b.windows, 3);
  EXPECT_EQ(idle_baseline_from_windows({}).windows, 0);
}

// The case: 2% over idle. Idle 10 W with 0.5 W spread; a 1 s window
// at 10.2 W has 0.2 J net, inside the 1 J noise bound: no figure.
TEST(NetEnergy, TwoPercentOverANoisyIdleIsNull) {
  const IdleBaseline idle{10.0, 0.5, 5};
  auto r = net_energy(10.2, 1.0, idle);
  EXPECT_FALSE(r.net_j);
  EXPECT_DOUBLE_EQ(r.noise_j, 1.0);
  EXPECT_NE(r.reason.find("within the idle noise"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.bound.empty());
}

TEST(NetEnergy, ClearlyAboveIdleGivesTheNet) {
  const IdleBaseline idle{10.0, 0.5, 5};
  auto r = net_energy(25.0, 1.0, idle);
  ASSERT_TRUE(r.net_j);
  EXPECT_DOUBLE_EQ(*r.net_j, 15.0);
  EXPECT_TRUE(r.reason.empty());
  // Just at the bound is still noise.
  EXPECT_FALSE(net_energy(11.0, 1.0, idle).net_j);
}

TEST(NetEnergy, UnknownSpreadOrBadInputIsNullWithAReason) {
  EXPECT_NE(net_energy(50, 1, IdleBaseline{10, 0, 1}).reason.find("need at least 2"), std::string::npos);
  EXPECT_FALSE(net_energy(NAN, 1, IdleBaseline{10, 0.1, 3}).net_j);
  EXPECT_FALSE(net_energy(50, 0, IdleBaseline{10, 0.1, 3}).net_j);
  EXPECT_FALSE(net_energy(5, 1, IdleBaseline{10, 0.1, 3}).net_j);  // below idle
}
