#include "npu/xdna/discovery.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/fake_driver.h"

namespace flopwatt::npu::xdna {
namespace {

const std::string kFixtures = std::string(FLOPWATT_TEST_FIXTURES) + "/npu";

TEST(Discovery, NoNodeNoNpuSaysSo) {
  const auto d = discover_xdna(kFixtures + "/root-empty");
  EXPECT_FALSE(d.ok());
  EXPECT_TRUE(d.nodes.empty());
  EXPECT_TRUE(d.pci.empty());
  EXPECT_NE(d.reason.find("no amdxdna device"), std::string::npos) << d.reason;
  EXPECT_NE(d.fix.find("npu:sim"), std::string::npos) << d.fix;
}

TEST(Discovery, PlainFileIsNotADrmDevice) {
  // Opened for real; libdrm's drmGetVersion fails on a regular file.
  const auto d = discover_xdna(kFixtures + "/root-fake-node");
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_TRUE(d.nodes[0].opened);
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.reason.find("not a DRM device"), std::string::npos) << d.reason;
}

TEST(Discovery, NpuWithoutDriver) {
  const auto d = discover_xdna(kFixtures + "/root-npu-unbound");
  ASSERT_EQ(d.pci.size(), 1u) << "the Intel 0x1502 function must be ignored";
  EXPECT_EQ(d.pci[0].generation, "npu4");
  EXPECT_EQ(d.pci[0].address, "0000:c5:00.1");
  EXPECT_EQ(d.pci[0].firmware_dir, "/lib/firmware/amdnpu/17f0_10");
  EXPECT_NE(d.reason.find("no driver bound"), std::string::npos) << d.reason;
  EXPECT_NE(d.fix.find("modprobe amdxdna"), std::string::npos) << d.fix;
}

// A root with a bound driver, optionally with its firmware.
std::string make_bound_root(const npu::test::TempDir& t, bool firmware) {
  namespace fs = std::filesystem;
  const std::string dev = t.path() + "/sys/bus/pci/devices/0000:c4:00.1";
  t.write("sys/bus/pci/devices/0000:c4:00.1/vendor", "0x1022\n");
  t.write("sys/bus/pci/devices/0000:c4:00.1/device", "0x1502\n");
  t.write("sys/bus/pci/devices/0000:c4:00.1/revision", "0x00\n");
  fs::create_directories(t.path() + "/sys/bus/pci/drivers/amdxdna");
  fs::create_symlink("../../../bus/pci/drivers/amdxdna", dev + "/driver");
  if (firmware) t.write("lib/firmware/amdnpu/1502_00/npu.sbin", "fw");
  return t.path();
}

TEST(Discovery, BoundDriverWithoutFirmware) {
  npu::test::TempDir t;
  const auto d = discover_xdna(make_bound_root(t, false));
  ASSERT_EQ(d.pci.size(), 1u);
  EXPECT_EQ(d.pci[0].driver, "amdxdna");
  EXPECT_EQ(d.pci[0].generation, "npu1");
  EXPECT_FALSE(d.pci[0].firmware_present);
  EXPECT_NE(d.reason.find("firmware is missing"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("1502_00"), std::string::npos) << d.reason;
}

TEST(Discovery, BoundDriverWithFirmwareButNoNode) {
  npu::test::TempDir t;
  const auto d = discover_xdna(make_bound_root(t, true));
  EXPECT_TRUE(d.pci[0].firmware_present);
  EXPECT_NE(d.reason.find("exposes no /dev/accel node"), std::string::npos) << d.reason;
}

TEST(Discovery, PermissionDenied) {
  npu::test::TempDir t;
  t.write("dev/accel/accel0", "");
  const auto d = discover_xdna(t.path(), [](const std::string&, int* err) -> std::unique_ptr<DriverApi> {
    *err = EACCES;
    return nullptr;
  });
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.reason.find("permission denied"), std::string::npos) << d.reason;
  EXPECT_NE(d.fix.find("render"), std::string::npos) << d.fix;
}

TEST(Discovery, OtherDriverAndTheRealThing) {
  npu::test::TempDir t;
  t.write("dev/accel/accel0", "");
  t.write("dev/accel/accel1", "");
  auto opener = [](const std::string& path, int*) -> std::unique_ptr<DriverApi> {
    const bool first = path.find("accel0") != std::string::npos;
    // The second node reports what both builds of amdxdna register as their name.
    return first ? std::make_unique<test::FakeDriver>(test::FakeDriver::Design{}, "habanalabs")
                 : std::make_unique<test::FakeDriver>(test::FakeDriver::Design{});
  };
  const auto d = discover_xdna(t.path(), opener);
  ASSERT_EQ(d.nodes.size(), 2u);
  EXPECT_NE(d.nodes[0].problem.find("'habanalabs', not amdxdna"), std::string::npos) << d.nodes[0].problem;
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.node, t.path() + "/dev/accel/accel1");

  auto only_other = [](const std::string&, int*) -> std::unique_ptr<DriverApi> {
    return std::make_unique<test::FakeDriver>(test::FakeDriver::Design{}, "habanalabs");
  };
  const auto o = discover_xdna(t.path(), only_other);
  EXPECT_FALSE(o.ok());
  EXPECT_NE(o.reason.find("not amdxdna"), std::string::npos) << o.reason;

  // "amdxdna" is the module's name, not the DRM driver's.
  auto module_name = [](const std::string&, int*) -> std::unique_ptr<DriverApi> {
    return std::make_unique<test::FakeDriver>(test::FakeDriver::Design{}, "amdxdna");
  };
  EXPECT_FALSE(discover_xdna(t.path(), module_name).ok());
}

TEST(Discovery, FirmwareDirNames) {
  EXPECT_EQ(firmware_dir_name(0x1502, 0x00), "1502_00");
  EXPECT_EQ(firmware_dir_name(0x17f0, 0x10), "17f0_10");
}

}  // namespace
}  // namespace flopwatt::npu::xdna
