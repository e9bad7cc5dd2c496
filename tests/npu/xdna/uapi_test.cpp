#include "npu/xdna/uapi.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "npu/xdna/command.h"
#include "npu/xdna/hw_context.h"

namespace flopwatt::npu::xdna {
namespace {

// The sizes are static_asserted in uapi.h; these check field offsets the
// driver reads and writes, which a size check alone would not catch.
TEST(Uapi, OutputFieldsSitWhereTheDriverWritesThem) {
  EXPECT_EQ(offsetof(CreateHwctx, max_opc), 32u);
  EXPECT_EQ(offsetof(CreateHwctx, handle), 48u);
  EXPECT_EQ(offsetof(CreateHwctx, syncobj_handle), 52u);
  EXPECT_EQ(offsetof(ConfigHwctx, param_val), 8u);
  EXPECT_EQ(offsetof(CreateBo, type), 24u);
  EXPECT_EQ(offsetof(CreateBo, handle), 28u);
  EXPECT_EQ(offsetof(GetBoInfo, map_offset), 24u);
  EXPECT_EQ(offsetof(GetBoInfo, xdna_addr), 40u);
  EXPECT_EQ(offsetof(SyncBo, offset), 8u);
  EXPECT_EQ(offsetof(ExecCmd, cmd_handles), 24u);
  EXPECT_EQ(offsetof(ExecCmd, seq), 48u);
  EXPECT_EQ(offsetof(AieMetadata, core), 16u);
  EXPECT_EQ(offsetof(Sensor, unitm), 160u);
  EXPECT_EQ(_IOC_SIZE(kIoctlExecCmd), sizeof(ExecCmd));
  EXPECT_EQ(_IOC_NR(kIoctlCreateHwctx), 0x40u);
  EXPECT_EQ(_IOC_TYPE(kIoctlGetInfo), unsigned('d'));
}

TEST(Command, StartCuPacketLayout) {
  const std::uint64_t bufs[] = {0x1000000010ull, 0x2000000020ull, 0x3000000030ull};
  const auto p = start_cu_packet(0, 0x4000000040ull, 123, bufs);
  ASSERT_EQ(p.size(), 1u + 1 + 2 + 2 + 1 + 6);
  const PacketHeader h = decode_header(p[0]);
  EXPECT_EQ(h.state, kErtStateNew);
  EXPECT_EQ(h.opcode, kErtStartCu);
  EXPECT_EQ(h.count, p.size() - 1);
  EXPECT_EQ(h.type, kErtTypeCu);
  EXPECT_EQ(h.extra_cu_masks, 0u);
  EXPECT_EQ(p[1], 1u);                          // CU 0
  EXPECT_EQ(p[2], 3u);                          // opcode 3, low word
  EXPECT_EQ(p[3], 0u);
  EXPECT_EQ(p[4], 0x40u);                       // instruction address at register 0x08
  EXPECT_EQ(p[5], 0x40u);
  EXPECT_EQ(p[6], 123u);                        // instruction words at 0x10
  EXPECT_EQ(p[7], 0x10u);                       // first buffer at 0x14
  EXPECT_EQ(p[8], 0x10u);
  EXPECT_EQ(p[11], 0x30u);
  EXPECT_EQ(start_cu_packet(3, 0, 0, {})[1], 8u);
  EXPECT_THROW(start_cu_packet(32, 0, 0, {}), std::runtime_error);
}

TEST(HwContext, CuConfigParameterLayout) {
  std::vector<CuConfig> cus(2);
  cus[0] = CuConfig{7, 0, {}};
  cus[1] = CuConfig{9, 1, {}};
  const auto b = cu_config_param(cus);
  ASSERT_EQ(b.size(), 8u + 2 * 8);
  EXPECT_EQ(b[0], 2);  // num_cus
  EXPECT_EQ(b[8], 7);  // cu_bo of the first
  EXPECT_EQ(b[12], 0);
  EXPECT_EQ(b[16], 9);
  EXPECT_EQ(b[20], 1);  // cu_func of the second
}

}  // namespace
}  // namespace flopwatt::npu::xdna
