#include "npu/xdna/uapi.h"

#include <gtest/gtest.h>

#include <cstddef>

#include "npu/xdna/command.h"
#include "npu/xdna/hw_context.h"
#include "tests/npu/xdna/upstream_uapi.h"

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

namespace up = test::upstream;

// flopwatt's header against the fake's transcription of upstream: numbers,
// sizes and the offsets of every field the driver reads or writes.
TEST(Uapi, IoctlNumbersMatchUpstream) {
  EXPECT_EQ(kIoctlCreateHwctx, up::kIoctlCreateHwctx);
  EXPECT_EQ(kIoctlDestroyHwctx, up::kIoctlDestroyHwctx);
  EXPECT_EQ(kIoctlConfigHwctx, up::kIoctlConfigHwctx);
  EXPECT_EQ(kIoctlCreateBo, up::kIoctlCreateBo);
  EXPECT_EQ(kIoctlGetBoInfo, up::kIoctlGetBoInfo);
  EXPECT_EQ(kIoctlSyncBo, up::kIoctlSyncBo);
  EXPECT_EQ(kIoctlExecCmd, up::kIoctlExecCmd);
  EXPECT_EQ(kIoctlGetInfo, up::kIoctlGetInfo);
  EXPECT_EQ(kIoctlSetState, up::kIoctlSetState);
}

TEST(Uapi, GetInfoParametersMatchUpstream) {
  EXPECT_EQ(kQueryAieStatus, up::kQueryAieStatus);
  EXPECT_EQ(kQueryAieMetadata, up::kQueryAieMetadata);
  EXPECT_EQ(kQueryAieVersion, up::kQueryAieVersion);
  EXPECT_EQ(kQueryClockMetadata, up::kQueryClockMetadata);
  EXPECT_EQ(kQuerySensors, up::kQuerySensors);
  EXPECT_EQ(kQueryHwContexts, up::kQueryHwContexts);
  EXPECT_EQ(kQueryFirmwareVersion, up::kQueryFirmwareVersion);
  EXPECT_EQ(kGetPowerMode, up::kGetPowerMode);
  EXPECT_EQ(kQueryResourceInfo, up::kQueryResourceInfo) << "13 is GET_FRAME_BOUNDARY_PREEMPT_STATE";
}

TEST(Uapi, ConstantsMatchUpstream) {
  EXPECT_EQ(kBoShmem, up::kBoShare);
  EXPECT_EQ(kBoDevHeap, up::kBoDevHeap);
  EXPECT_EQ(kBoDev, up::kBoDev);
  EXPECT_EQ(kBoCmd, up::kBoCmd);
  EXPECT_EQ(kConfigCu, up::kHwctxConfigCu);
  EXPECT_EQ(kSyncToDevice, up::kSyncDirectToDevice);
  EXPECT_EQ(kSyncFromDevice, up::kSyncDirectFromDevice);
  EXPECT_EQ(kInvalidAddr, up::kInvalidAddr);
  EXPECT_EQ(kDevHeapBytes, up::kDevmSize);
  EXPECT_EQ(kDevHeapMaxBytes, up::kDevmMaxSize);
  EXPECT_EQ(kErtStartCu, up::kErtStartCu);
  EXPECT_EQ(kErtStateNew, up::kErtCmdStateNew);
  EXPECT_EQ(kErtStateCompleted, up::kErtCmdStateCompleted);
  EXPECT_EQ(kErtStateError, up::kErtCmdStateError);
  EXPECT_EQ(kErtStateAbort, up::kErtCmdStateAbort);
  EXPECT_EQ(kErtStateTimeout, up::kErtCmdStateTimeout);
  EXPECT_STREQ(kDrmDriverName, up::kDrmDriverName);
  EXPECT_EQ(kOutOfTreeDriverMajor, up::kOotDriverMajor);
  EXPECT_LT(up::kMainlineDriverMajor, kOutOfTreeDriverMajor);
  EXPECT_EQ(kUserStartColNotRequested, up::kUserStartColNotRequested);
}

#define FLOPWATT_EXPECT_FIELD(ours, theirs, field) EXPECT_EQ(offsetof(ours, field), offsetof(theirs, field)) << #ours "." #field
TEST(Uapi, LayoutsMatchUpstream) {
  EXPECT_EQ(sizeof(QosInfo), sizeof(up::amdxdna_qos_info));
  EXPECT_EQ(sizeof(QosInfoOutOfTree), sizeof(up::amdxdna_qos_info_oot));
  EXPECT_EQ(offsetof(QosInfoOutOfTree, user_start_col), offsetof(up::amdxdna_qos_info_oot, user_start_col));
  EXPECT_EQ(sizeof(CreateHwctx), sizeof(up::amdxdna_drm_create_hwctx));
  FLOPWATT_EXPECT_FIELD(CreateHwctx, up::amdxdna_drm_create_hwctx, qos_p);
  FLOPWATT_EXPECT_FIELD(CreateHwctx, up::amdxdna_drm_create_hwctx, max_opc);
  FLOPWATT_EXPECT_FIELD(CreateHwctx, up::amdxdna_drm_create_hwctx, num_tiles);
  FLOPWATT_EXPECT_FIELD(CreateHwctx, up::amdxdna_drm_create_hwctx, handle);
  FLOPWATT_EXPECT_FIELD(CreateHwctx, up::amdxdna_drm_create_hwctx, syncobj_handle);
  EXPECT_EQ(sizeof(DestroyHwctx), sizeof(up::amdxdna_drm_destroy_hwctx));
  EXPECT_EQ(sizeof(ConfigHwctx), sizeof(up::amdxdna_drm_config_hwctx));
  FLOPWATT_EXPECT_FIELD(ConfigHwctx, up::amdxdna_drm_config_hwctx, param_type);
  FLOPWATT_EXPECT_FIELD(ConfigHwctx, up::amdxdna_drm_config_hwctx, param_val);
  FLOPWATT_EXPECT_FIELD(ConfigHwctx, up::amdxdna_drm_config_hwctx, param_val_size);
  EXPECT_EQ(sizeof(CuConfigHeader), sizeof(up::amdxdna_hwctx_param_config_cu));
  EXPECT_EQ(sizeof(CuConfig), sizeof(up::amdxdna_cu_config));
  FLOPWATT_EXPECT_FIELD(CuConfig, up::amdxdna_cu_config, cu_func);
  EXPECT_EQ(sizeof(CreateBo), sizeof(up::amdxdna_drm_create_bo));
  FLOPWATT_EXPECT_FIELD(CreateBo, up::amdxdna_drm_create_bo, size);
  FLOPWATT_EXPECT_FIELD(CreateBo, up::amdxdna_drm_create_bo, type);
  FLOPWATT_EXPECT_FIELD(CreateBo, up::amdxdna_drm_create_bo, handle);
  EXPECT_EQ(sizeof(GetBoInfo), sizeof(up::amdxdna_drm_get_bo_info));
  FLOPWATT_EXPECT_FIELD(GetBoInfo, up::amdxdna_drm_get_bo_info, handle);
  FLOPWATT_EXPECT_FIELD(GetBoInfo, up::amdxdna_drm_get_bo_info, map_offset);
  FLOPWATT_EXPECT_FIELD(GetBoInfo, up::amdxdna_drm_get_bo_info, vaddr);
  FLOPWATT_EXPECT_FIELD(GetBoInfo, up::amdxdna_drm_get_bo_info, xdna_addr);
  EXPECT_EQ(sizeof(SyncBo), sizeof(up::amdxdna_drm_sync_bo));
  FLOPWATT_EXPECT_FIELD(SyncBo, up::amdxdna_drm_sync_bo, direction);
  FLOPWATT_EXPECT_FIELD(SyncBo, up::amdxdna_drm_sync_bo, offset);
  EXPECT_EQ(sizeof(ExecCmd), sizeof(up::amdxdna_drm_exec_cmd));
  FLOPWATT_EXPECT_FIELD(ExecCmd, up::amdxdna_drm_exec_cmd, hwctx);
  FLOPWATT_EXPECT_FIELD(ExecCmd, up::amdxdna_drm_exec_cmd, cmd_handles);
  FLOPWATT_EXPECT_FIELD(ExecCmd, up::amdxdna_drm_exec_cmd, args);
  FLOPWATT_EXPECT_FIELD(ExecCmd, up::amdxdna_drm_exec_cmd, arg_count);
  FLOPWATT_EXPECT_FIELD(ExecCmd, up::amdxdna_drm_exec_cmd, seq);
  EXPECT_EQ(sizeof(GetInfo), sizeof(up::amdxdna_drm_get_info));
  FLOPWATT_EXPECT_FIELD(GetInfo, up::amdxdna_drm_get_info, buffer);
  EXPECT_EQ(sizeof(AieMetadata), sizeof(up::amdxdna_drm_query_aie_metadata));
  FLOPWATT_EXPECT_FIELD(AieMetadata, up::amdxdna_drm_query_aie_metadata, cols);
  FLOPWATT_EXPECT_FIELD(AieMetadata, up::amdxdna_drm_query_aie_metadata, core);
  FLOPWATT_EXPECT_FIELD(AieMetadata, up::amdxdna_drm_query_aie_metadata, shim);
  EXPECT_EQ(offsetof(AieMetadata, version_major), offsetof(up::amdxdna_drm_query_aie_metadata, version));
  EXPECT_EQ(sizeof(ClockMetadata), sizeof(up::amdxdna_drm_query_clock_metadata));
  EXPECT_EQ(offsetof(Clock, freq_mhz), offsetof(up::amdxdna_drm_query_clock, freq_mhz));
  EXPECT_EQ(sizeof(Sensor), sizeof(up::amdxdna_drm_query_sensor));
  FLOPWATT_EXPECT_FIELD(Sensor, up::amdxdna_drm_query_sensor, input);
  FLOPWATT_EXPECT_FIELD(Sensor, up::amdxdna_drm_query_sensor, unitm);
  FLOPWATT_EXPECT_FIELD(Sensor, up::amdxdna_drm_query_sensor, type);
  EXPECT_EQ(sizeof(HwContextInfo), sizeof(up::amdxdna_drm_query_hwctx));
  FLOPWATT_EXPECT_FIELD(HwContextInfo, up::amdxdna_drm_query_hwctx, pid);
  FLOPWATT_EXPECT_FIELD(HwContextInfo, up::amdxdna_drm_query_hwctx, errors);
  EXPECT_EQ(sizeof(PowerMode), sizeof(up::amdxdna_drm_get_power_mode));
  EXPECT_EQ(sizeof(FirmwareVersion), sizeof(up::amdxdna_drm_query_firmware_version));
  EXPECT_EQ(sizeof(ResourceInfo), sizeof(up::amdxdna_drm_get_resource_info));
  FLOPWATT_EXPECT_FIELD(ResourceInfo, up::amdxdna_drm_get_resource_info, npu_task_max);
  FLOPWATT_EXPECT_FIELD(ResourceInfo, up::amdxdna_drm_get_resource_info, npu_task_curr);
}
#undef FLOPWATT_EXPECT_FIELD

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

TEST(Command, StartCuPacketFollowsTheRegisterMap) {
  RegisterMap m;
  m.buffers = {0x18, 0x20, 0x28, 0x30};
  m.bytes = 0x38;
  const std::uint64_t bufs[] = {0x1000000010ull, 0x2000000020ull};
  const auto p = start_cu_packet(1, m, 0x40, 9, bufs);
  ASSERT_EQ(p.size(), 2u + 0x38 / 4);
  EXPECT_EQ(decode_header(p[0]).count, p.size() - 1);
  EXPECT_EQ(p[1], 2u);
  EXPECT_EQ(p[2 + 0x10 / 4], 9u);
  EXPECT_EQ(p[2 + 0x14 / 4], 0u) << "the gap before the first buffer stays zero";
  EXPECT_EQ(p[2 + 0x18 / 4], 0x10u);
  EXPECT_EQ(p[2 + 0x1c / 4], 0x10u);
  EXPECT_EQ(p[2 + 0x20 / 4], 0x20u);
  EXPECT_EQ(p[2 + 0x28 / 4], 0u) << "unused buffer arguments are zero";
  const std::uint64_t five[] = {1, 2, 3, 4, 5};
  EXPECT_THROW(start_cu_packet(0, m, 0, 0, five), std::runtime_error);
  m.buffers[0] = 0x34;
  EXPECT_THROW(start_cu_packet(0, m, 0, 0, bufs), std::runtime_error) << "a pointer past the map's end";
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
