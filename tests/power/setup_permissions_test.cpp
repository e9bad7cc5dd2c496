// scripts/setup-permissions.sh: its dry run names every change, and it refuses
// to act without root.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "process_util.h"

using namespace flopwatt::power::testing;

namespace {
const std::string kScript = std::string(FLOPWATT_SOURCE_DIR) + "/scripts/setup-permissions.sh";
}

TEST(SetupPermissions, DryRunShowsTheRuleAndChangesNothing) {
  const CommandResult r = run_command("bash '" + kScript + "' --dry-run --group flopwatt_test_grp 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("would write /etc/udev/rules.d/70-flopwatt-powercap.rules"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SUBSYSTEM==\"powercap\""), std::string::npos);
  EXPECT_NE(r.out.find("chgrp flopwatt_test_grp /sys%p/energy_uj"), std::string::npos);
  EXPECT_EQ(r.out.find("running:"), std::string::npos);
  EXPECT_EQ(run_command("getent group flopwatt_test_grp >/dev/null || echo absent").out, "absent\n");
}

TEST(SetupPermissions, ExplainNamesPerfAndMsrAlternatives) {
  const CommandResult r = run_command("bash '" + kScript + "' --explain 2>&1");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("perf_event_paranoid"), std::string::npos);
  EXPECT_NE(r.out.find("CAP_PERFMON"), std::string::npos);
  EXPECT_NE(r.out.find("modprobe msr"), std::string::npos);
  EXPECT_NE(r.out.find("CAP_SYS_RAWIO"), std::string::npos);
}

TEST(SetupPermissions, RefusesWithoutRootAndBadGroupNames) {
  EXPECT_EQ(run_command("bash '" + kScript + "' --group 'bad name' >/dev/null 2>&1; echo $?").out, "2\n");
  if (geteuid() != 0 || !have_program("setpriv")) GTEST_SKIP() << "needs root and setpriv to run as another user";
  // nobody may not be able to reach the checkout (a 0700 temporary clone), so
  // it runs a copy from a directory anyone can read.
  char dir[] = "/tmp/flopwatt-setup-perm-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string copy = std::string(dir) + "/setup-permissions.sh";
  ASSERT_EQ(run_command("chmod 755 '" + std::string(dir) + "' && cp '" + kScript + "' '" + copy + "' && chmod 755 '" +
                        copy + "' && echo ok")
                .out,
            "ok\n");
  const CommandResult r =
      run_command("setpriv --reuid=65534 --regid=65534 --clear-groups bash '" + copy + "' 2>&1; echo rc=$?");
  run_command("rm -rf '" + std::string(dir) + "'");
  EXPECT_NE(r.out.find("must run as root"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out;
}
