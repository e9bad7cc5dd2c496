// The permission-denied path as a real unprivileged user sees it: root ignores
// file modes, so the probe runs under setpriv as nobody against a fixture tree
// whose energy_uj is mode 000.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_tree.h"
#include "process_util.h"

using namespace flopwatt::power::testing;

TEST(Unprivileged, EnergyUjPermissionDeniedSaysWhyAndTheFix) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user with setpriv";
  if (!have_program("setpriv")) GTEST_SKIP() << "setpriv not installed (Debian package util-linux)";
  FixtureTree t;
  ::chmod(t.root().c_str(), 0755);  // mkdtemp makes it 0700
  t.write("sys/class/powercap/intel-rapl:0/name", "package-0\n");
  t.write("sys/class/powercap/intel-rapl:0/energy_uj", "1000\n");
  t.write("sys/class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
  ::chmod(t.path("sys/class/powercap/intel-rapl:0/energy_uj").c_str(), 0);
  // The build tree may sit where nobody cannot reach it (a 0700 temporary
  // clone), so nobody runs a copy of the probe from the fixture root.
  const std::string probe = t.root() + "/probe";
  ASSERT_EQ(run_command("cp '" FLOPWATT_POWER_PROBE "' '" + probe + "' && chmod 755 '" + probe + "' && echo ok").out,
            "ok\n");
  const CommandResult r = run_command("setpriv --reuid=65534 --regid=65534 --clear-groups '" + probe + "' --root '" +
                                      t.root() + "' 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string line = probe_line(r.out, "status", "rapl-powercap:package-0");
  ASSERT_FALSE(line.empty()) << r.out;
  EXPECT_NE(line.find("\t0\tpackage"), std::string::npos) << line;  // unavailable
  EXPECT_NE(line.find("readable by root only"), std::string::npos) << line;
  // The probe was copied where no setup command sits beside it: the installed name.
  EXPECT_NE(line.find("sudo flopwatt-setup-permissions ("), std::string::npos) << line;

  // With the setup command beside the program (a build tree, a prefix off PATH), its full path.
  t.write("flopwatt-setup-permissions", "#!/bin/sh\n");
  ::chmod(t.path("flopwatt-setup-permissions").c_str(), 0755);
  const CommandResult beside = run_command("setpriv --reuid=65534 --regid=65534 --clear-groups '" + probe +
                                           "' --root '" + t.root() + "' 2>&1");
  const std::string fix = probe_line(beside.out, "status", "rapl-powercap:package-0");
  EXPECT_NE(fix.find("sudo " + t.root() + "/flopwatt-setup-permissions ("), std::string::npos) << fix;

  // Once readable (what the udev rule does for the group), the same user gets the source.
  ::chmod(t.path("sys/class/powercap/intel-rapl:0/energy_uj").c_str(), 0444);
  const CommandResult ok = run_command("setpriv --reuid=65534 --regid=65534 --clear-groups '" + probe + "' --root '" +
                                       t.root() + "' 2>&1");
  EXPECT_NE(probe_line(ok.out, "status", "rapl-powercap:package-0").find("\t1\tpackage"), std::string::npos) << ok.out;
}
