// The amdxdna contract as the fake driver knows it, transcribed from upstream
// and deliberately not from flopwatt's npu/xdna/uapi.h: a fake that shared the
// project's header would agree with every mistake in it. uapi_test.cpp
// cross-checks the two.
//
// Sources (names in comments are upstream's):
//   [ml]  mainline Linux include/uapi/drm/amdxdna_accel.h (v6.14: ioctls 0..8,
//         GET_INFO params 0..5, 8, 9) and amd/xdna-driver's copy of it headed
//         for mainline, include/uapi/drm/amdxdna_accel.h (params up to 15)
//   [oot] amd/xdna-driver src/include/uapi/drm_local/amdxdna_accel.h, the
//         header the out-of-tree module and XRT's shim build against
//   [drv] drivers/accel/amdxdna/*.c|h (mainline and amd/xdna-driver)
// Where [ml] and [oot] differ both are given.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flopwatt::npu::xdna::test::upstream {

// include/uapi/drm/drm.h: DRM_IOCTL_BASE 'd', DRM_COMMAND_BASE 0x40, and
// DRM_IOWR = _IOC(_IOC_READ | _IOC_WRITE, ...) from asm-generic/ioctl.h
// (nr bits 0-7, type 8-15, size 16-29, dir 30-31, READ|WRITE = 3).
inline constexpr unsigned kDrmCommandBase = 0x40;
constexpr unsigned long drm_iowr(unsigned index, std::size_t size) {
  return (3ul << 30) | (static_cast<unsigned long>(size) << 16) | (static_cast<unsigned long>('d') << 8) |
         (kDrmCommandBase + index);
}

// enum amdxdna_drm_ioctl_id [ml] / #define DRM_AMDXDNA_* [oot]: same values.
inline constexpr unsigned kCreateHwctx = 0;   // DRM_AMDXDNA_CREATE_HWCTX
inline constexpr unsigned kDestroyHwctx = 1;  // DRM_AMDXDNA_DESTROY_HWCTX
inline constexpr unsigned kConfigHwctx = 2;   // DRM_AMDXDNA_CONFIG_HWCTX
inline constexpr unsigned kCreateBo = 3;      // DRM_AMDXDNA_CREATE_BO
inline constexpr unsigned kGetBoInfo = 4;     // DRM_AMDXDNA_GET_BO_INFO
inline constexpr unsigned kSyncBo = 5;        // DRM_AMDXDNA_SYNC_BO
inline constexpr unsigned kExecCmd = 6;       // DRM_AMDXDNA_EXEC_CMD
inline constexpr unsigned kGetInfo = 7;       // DRM_AMDXDNA_GET_INFO
inline constexpr unsigned kSetState = 8;      // DRM_AMDXDNA_SET_STATE

// struct amdxdna_qos_info [ml]: six words.
struct amdxdna_qos_info {
  std::uint32_t gops, fps, dma_bandwidth, latency, frame_exec_time, priority;
};
// struct amdxdna_qos_info [oot]: two more words. The driver copies
// sizeof(its struct) from qos_p (amdxdna_ctx.c: amdxdna_drm_create_hwctx_ioctl,
// copy_from_user(&ctx->qos, ..., sizeof(ctx->qos))), so a 24-byte object
// handed to the out-of-tree driver is over-read by 8 bytes.
struct amdxdna_qos_info_oot {
  std::uint32_t gops, fps, dma_bandwidth, latency, frame_exec_time, priority;
  std::uint32_t user_start_col;  // USER_START_COL_NOT_REQUESTED unless a column is asked for
  std::uint32_t reserved;        // MBZ
};
inline constexpr std::uint32_t kUserStartColNotRequested = 0xFF;  // USER_START_COL_NOT_REQUESTED [oot]

struct amdxdna_drm_create_hwctx {
  std::uint64_t ext, ext_flags, qos_p;
  std::uint32_t umq_bo, log_buf_bo, max_opc, num_tiles, mem_size, umq_doorbell;
  std::uint32_t handle, syncobj_handle;
};
struct amdxdna_drm_destroy_hwctx {
  std::uint32_t handle, pad;
};
struct amdxdna_cu_config {
  std::uint32_t cu_bo;
  std::uint8_t cu_func;
  std::uint8_t pad[3];
};
// struct amdxdna_hwctx_param_config_cu without its flexible cu_configs[].
struct amdxdna_hwctx_param_config_cu {
  std::uint16_t num_cus;
  std::uint16_t pad[3];
};
inline constexpr std::uint32_t kHwctxConfigCu = 0;  // DRM_AMDXDNA_HWCTX_CONFIG_CU
struct amdxdna_drm_config_hwctx {
  std::uint32_t handle, param_type;
  std::uint64_t param_val;
  std::uint32_t param_val_size, pad;
};

// enum amdxdna_bo_type [ml] (AMDXDNA_BO_SHMEM there, AMDXDNA_BO_SHARE in [oot]).
inline constexpr std::uint32_t kBoShare = 1;    // AMDXDNA_BO_SHMEM / AMDXDNA_BO_SHARE
inline constexpr std::uint32_t kBoDevHeap = 2;  // AMDXDNA_BO_DEV_HEAP
inline constexpr std::uint32_t kBoDev = 3;      // AMDXDNA_BO_DEV
inline constexpr std::uint32_t kBoCmd = 4;      // AMDXDNA_BO_CMD
struct amdxdna_drm_create_bo {
  std::uint64_t flags, vaddr, size;
  std::uint32_t type, handle;
};
struct amdxdna_drm_get_bo_info {
  std::uint64_t ext, ext_flags;
  std::uint32_t handle, pad;
  std::uint64_t map_offset, vaddr, xdna_addr;
};
inline constexpr std::uint64_t kInvalidAddr = ~0ull;  // AMDXDNA_INVALID_ADDR (~0UL)
struct amdxdna_drm_sync_bo {
  std::uint32_t handle, direction;
  std::uint64_t offset, size;
};
inline constexpr std::uint32_t kSyncDirectToDevice = 0;    // SYNC_DIRECT_TO_DEVICE
inline constexpr std::uint32_t kSyncDirectFromDevice = 1;  // SYNC_DIRECT_FROM_DEVICE
struct amdxdna_drm_exec_cmd {
  std::uint64_t ext, ext_flags;
  std::uint32_t hwctx, type;
  std::uint64_t cmd_handles, args;
  std::uint32_t cmd_count, arg_count;
  std::uint64_t seq;
};
inline constexpr std::uint32_t kCmdSubmitExecBuf = 0;  // AMDXDNA_CMD_SUBMIT_EXEC_BUF
struct amdxdna_drm_get_info {
  std::uint32_t param, buffer_size;
  std::uint64_t buffer;
};
// struct amdxdna_drm_set_state has the same three fields.
using amdxdna_drm_set_state = amdxdna_drm_get_info;

// enum amdxdna_drm_get_param [ml] / #define DRM_AMDXDNA_* [oot].
inline constexpr std::uint32_t kQueryAieStatus = 0;       // DRM_AMDXDNA_QUERY_AIE_STATUS
inline constexpr std::uint32_t kQueryAieMetadata = 1;     // DRM_AMDXDNA_QUERY_AIE_METADATA
inline constexpr std::uint32_t kQueryAieVersion = 2;      // DRM_AMDXDNA_QUERY_AIE_VERSION
inline constexpr std::uint32_t kQueryClockMetadata = 3;   // DRM_AMDXDNA_QUERY_CLOCK_METADATA
inline constexpr std::uint32_t kQuerySensors = 4;         // DRM_AMDXDNA_QUERY_SENSORS
// enum amdxdna_sensor_type
inline constexpr std::uint8_t kSensorTypePower = 0, kSensorTypeColumnUtilization = 1, kSensorTypeTemperature = 2;
inline constexpr std::uint32_t kQueryHwContexts = 5;      // DRM_AMDXDNA_QUERY_HW_CONTEXTS
inline constexpr std::uint32_t kReadAieMem = 6;           // DRM_AMDXDNA_READ_AIE_MEM [oot] only
inline constexpr std::uint32_t kReadAieReg = 7;           // DRM_AMDXDNA_READ_AIE_REG [oot] only
inline constexpr std::uint32_t kQueryFirmwareVersion = 8;  // DRM_AMDXDNA_QUERY_FIRMWARE_VERSION
inline constexpr std::uint32_t kGetPowerMode = 9;         // DRM_AMDXDNA_GET_POWER_MODE
inline constexpr std::uint32_t kQueryTelemetry = 10;      // DRM_AMDXDNA_QUERY_TELEMETRY
inline constexpr std::uint32_t kGetForcePreemptState = 11;  // DRM_AMDXDNA_GET_FORCE_PREEMPT_STATE
inline constexpr std::uint32_t kQueryResourceInfo = 12;   // DRM_AMDXDNA_QUERY_RESOURCE_INFO
inline constexpr std::uint32_t kGetFrameBoundaryPreemptState = 13;  // DRM_AMDXDNA_GET_FRAME_BOUNDARY_PREEMPT_STATE
inline constexpr std::uint32_t kQueryCertFirmwareVersion = 14;  // DRM_AMDXDNA_QUERY_CERT_FIRMWARE_VERSION
inline constexpr std::uint32_t kGetAutoCoredump = 15;     // DRM_AMDXDNA_GET_AUTO_COREDUMP

struct amdxdna_drm_query_aie_version {
  std::uint32_t major, minor;
};
struct amdxdna_drm_query_aie_tile_metadata {
  std::uint16_t row_count, row_start, dma_channel_count, lock_count, event_reg_count, pad[3];
};
struct amdxdna_drm_query_aie_metadata {
  std::uint32_t col_size;
  std::uint16_t cols, rows;
  amdxdna_drm_query_aie_version version;
  amdxdna_drm_query_aie_tile_metadata core, mem, shim;
};
struct amdxdna_drm_query_clock {
  std::uint8_t name[16];
  std::uint32_t freq_mhz, pad;
};
struct amdxdna_drm_query_clock_metadata {
  amdxdna_drm_query_clock mp_npu_clock, h_clock;
};
struct amdxdna_drm_query_sensor {
  std::uint8_t label[64];
  std::uint32_t input, max, average, highest;
  std::uint8_t status[64];
  std::uint8_t units[16];
  std::int8_t unitm;
  std::uint8_t type;
  std::uint8_t pad[6];
};
struct amdxdna_drm_query_hwctx {
  std::uint32_t context_id, start_col, num_col, pad;
  std::int64_t pid;
  std::uint64_t command_submissions, command_completions, migrations, preemptions, errors;
};
struct amdxdna_drm_get_power_mode {
  std::uint8_t power_mode;
  std::uint8_t pad[7];
};
struct amdxdna_drm_query_firmware_version {
  std::uint32_t major, minor, patch, build;
};
struct amdxdna_drm_get_resource_info {
  std::uint64_t npu_clk_max, npu_tops_max, npu_task_max, npu_tops_curr, npu_task_curr;
};
// The answer to GET_FORCE_PREEMPT_STATE and GET_FRAME_BOUNDARY_PREEMPT_STATE.
struct amdxdna_drm_attribute_state {
  std::uint8_t state;
  std::uint8_t pad[7];
};

inline constexpr unsigned long kIoctlCreateHwctx = drm_iowr(kCreateHwctx, sizeof(amdxdna_drm_create_hwctx));
inline constexpr unsigned long kIoctlDestroyHwctx = drm_iowr(kDestroyHwctx, sizeof(amdxdna_drm_destroy_hwctx));
inline constexpr unsigned long kIoctlConfigHwctx = drm_iowr(kConfigHwctx, sizeof(amdxdna_drm_config_hwctx));
inline constexpr unsigned long kIoctlCreateBo = drm_iowr(kCreateBo, sizeof(amdxdna_drm_create_bo));
inline constexpr unsigned long kIoctlGetBoInfo = drm_iowr(kGetBoInfo, sizeof(amdxdna_drm_get_bo_info));
inline constexpr unsigned long kIoctlSyncBo = drm_iowr(kSyncBo, sizeof(amdxdna_drm_sync_bo));
inline constexpr unsigned long kIoctlExecCmd = drm_iowr(kExecCmd, sizeof(amdxdna_drm_exec_cmd));
inline constexpr unsigned long kIoctlGetInfo = drm_iowr(kGetInfo, sizeof(amdxdna_drm_get_info));
inline constexpr unsigned long kIoctlSetState = drm_iowr(kSetState, sizeof(amdxdna_drm_set_state));

// What drmGetVersion reports. Both builds register struct drm_driver with
// .name "amdxdna_accel_driver" and .desc "AMD XDNA DRM implementation"
// ([drv] amdxdna_pci_drv.c; [oot] src/driver/amdxdna/amdxdna_drm.c); only the
// version tells them apart: mainline's AMDXDNA_DRIVER_MAJOR is 0 (v6.14 sets
// none, later ones 0.x), the out-of-tree header's is 1 (minor 0).
inline constexpr const char* kDrmDriverName = "amdxdna_accel_driver";
inline constexpr const char* kDrmDriverDesc = "AMD XDNA DRM implementation";
inline constexpr int kMainlineDriverMajor = 0, kMainlineDriverMinor = 16;  // amdxdna_pci_drv.c at the time of writing
inline constexpr int kOotDriverMajor = 1, kOotDriverMinor = 0;

// Device memory (aie2_pci.h, npu*_regs.c). DEV objects are carved from
// [AIE2_DEVM_BASE, AIE2_DEVM_BASE + dev_heap_max_size); the heap itself is
// made of DEV_HEAP objects whose sizes are multiples of dev_mem_size.
inline constexpr std::uint64_t kDevmBase = 0x4000000;          // AIE2_DEVM_BASE
inline constexpr std::uint64_t kDevmSize = 64ull << 20;        // AIE2_DEVM_SIZE: dev_mem_size, and npu1's dev_heap_max_size
inline constexpr std::uint64_t kDevmMaxSize = 512ull << 20;    // AIE2_DEVM_MAX_SIZE: npu4/5/6 dev_heap_max_size
inline constexpr std::uint64_t kDevBufAlign = 1ull << 15;      // dev_mem_buf_shift = 15

// amdxdna_ctx.h (driver-internal, shared with XRT's ert.h).
inline constexpr std::uint32_t kErtStartCu = 0;            // ERT_START_CU
inline constexpr std::uint32_t kErtCmdStateNew = 1;        // ERT_CMD_STATE_NEW
inline constexpr std::uint32_t kErtCmdStateCompleted = 4;  // ERT_CMD_STATE_COMPLETED
inline constexpr std::uint32_t kErtCmdStateError = 5;      // ERT_CMD_STATE_ERROR
inline constexpr std::uint32_t kErtCmdStateAbort = 6;      // ERT_CMD_STATE_ABORT
inline constexpr std::uint32_t kErtCmdStateTimeout = 8;    // ERT_CMD_STATE_TIMEOUT
inline constexpr std::uint32_t kMaxArgCount = 4095;        // amdxdna_ctx.c: MAX_ARG_COUNT

static_assert(sizeof(amdxdna_qos_info) == 24 && sizeof(amdxdna_qos_info_oot) == 32);
static_assert(sizeof(amdxdna_drm_create_hwctx) == 56 && sizeof(amdxdna_drm_get_bo_info) == 48);
static_assert(sizeof(amdxdna_drm_query_aie_metadata) == 64 && sizeof(amdxdna_drm_query_sensor) == 168);
static_assert(sizeof(amdxdna_drm_get_resource_info) == 40 && sizeof(amdxdna_drm_attribute_state) == 8);

}  // namespace flopwatt::npu::xdna::test::upstream
