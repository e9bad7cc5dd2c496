// The amdxdna driver's ioctl interface (Linux >= 6.14, include/uapi/drm/
// amdxdna_accel.h), defined here because Debian 12's kernel headers predate
// it. Layouts follow that header; every struct is checked at compile time
// against the encoded size of its ioctl number, and every number against the
// DRM encoding (and against libdrm's own DRM_IOWR where the build has libdrm).
#pragma once
#include <sys/ioctl.h>

#include <cstdint>

// A build without the device backend (FLOPWATT_WITH_NPU_DEVICE=OFF) has no
// libdrm headers; the layouts are still checked against our own encoding.
#if __has_include(<drm.h>)
#include <drm.h>
#define FLOPWATT_CHECK_LIBDRM_IOWR(num, index, type) \
  static_assert((num) == DRM_IOWR(DRM_COMMAND_BASE + (index), type), #type " ioctl number")
#else
#define FLOPWATT_CHECK_LIBDRM_IOWR(num, index, type) static_assert(true)
#endif

namespace flopwatt::npu::xdna {

// Ioctl numbers as the driver's header encodes them (direction RW, type 'd',
// number 0x40 + index, size of the argument struct).
inline constexpr unsigned long kIoctlCreateHwctx = 0xC0386440ul;
inline constexpr unsigned long kIoctlDestroyHwctx = 0xC0086441ul;
inline constexpr unsigned long kIoctlConfigHwctx = 0xC0186442ul;
inline constexpr unsigned long kIoctlCreateBo = 0xC0206443ul;
inline constexpr unsigned long kIoctlGetBoInfo = 0xC0306444ul;
inline constexpr unsigned long kIoctlSyncBo = 0xC0186445ul;
inline constexpr unsigned long kIoctlExecCmd = 0xC0386446ul;
inline constexpr unsigned long kIoctlGetInfo = 0xC0106447ul;
inline constexpr unsigned long kIoctlSetState = 0xC0106448ul;

// struct amdxdna_qos_info: mainline's has these six words; amd/xdna-driver's
// (src/include/uapi/drm_local/amdxdna_accel.h) adds user_start_col and a
// reserved word. Either driver copies sizeof its own struct from qos_p.
struct QosInfo {
  std::uint32_t gops, fps, dma_bandwidth, latency, frame_exec_time, priority;
};
struct QosInfoOutOfTree {
  QosInfo base;
  std::uint32_t user_start_col, reserved;
};
inline constexpr std::uint32_t kUserStartColNotRequested = 0xFF;  // USER_START_COL_NOT_REQUESTED

// Both builds call themselves "amdxdna_accel_driver"; drmGetVersion's major
// tells them apart: amd/xdna-driver's AMDXDNA_DRIVER_MAJOR is 1, mainline's 0.
enum class DriverBuild { Mainline, OutOfTree };
inline constexpr const char* kDrmDriverName = "amdxdna_accel_driver";
inline constexpr int kOutOfTreeDriverMajor = 1;

struct CreateHwctx {
  std::uint64_t ext, ext_flags, qos_p;
  std::uint32_t umq_bo, log_buf_bo, max_opc, num_tiles, mem_size, umq_doorbell;
  std::uint32_t handle;          // out
  std::uint32_t syncobj_handle;  // out: completion timeline
};

struct DestroyHwctx {
  std::uint32_t handle, pad;
};

struct ConfigHwctx {
  std::uint32_t handle, param_type;
  std::uint64_t param_val;  // pointer to the parameter buffer (<= 4 KiB)
  std::uint32_t param_val_size, pad;
};
inline constexpr std::uint32_t kConfigCu = 0;

// CONFIG_CU's parameter buffer: a header followed by num_cus entries.
struct CuConfigHeader {
  std::uint16_t num_cus;
  std::uint16_t pad[3];
};
struct CuConfig {
  std::uint32_t cu_bo;  // a DEV buffer holding the CU's PDI
  std::uint8_t cu_func;
  std::uint8_t pad[3];
};

enum BoType : std::uint32_t { kBoShmem = 1, kBoDevHeap = 2, kBoDev = 3, kBoCmd = 4 };
// The heap is built from DEV_HEAP objects of a multiple of AIE2_DEVM_SIZE
// each, up to the device's dev_heap_max_size: AIE2_DEVM_SIZE on npu1,
// AIE2_DEVM_MAX_SIZE on npu4 and later (aie2_pci.h, npu*_regs.c).
inline constexpr std::uint64_t kDevHeapBytes = 64ull << 20;      // AIE2_DEVM_SIZE: one chunk
inline constexpr std::uint64_t kDevHeapMaxBytes = 512ull << 20;  // AIE2_DEVM_MAX_SIZE

struct CreateBo {
  std::uint64_t flags, vaddr, size;
  std::uint32_t type;
  std::uint32_t handle;  // out
};

struct GetBoInfo {
  std::uint64_t ext, ext_flags;
  std::uint32_t handle, pad;
  std::uint64_t map_offset, vaddr, xdna_addr;  // out
};

struct SyncBo {
  std::uint32_t handle, direction;  // 0 to device, 1 from device
  std::uint64_t offset, size;
};
inline constexpr std::uint32_t kSyncToDevice = 0, kSyncFromDevice = 1;

struct ExecCmd {
  std::uint64_t ext, ext_flags;
  std::uint32_t hwctx, type;    // type 0: submit an exec buffer
  std::uint64_t cmd_handles;    // the command BO handle itself when cmd_count is 1
  std::uint64_t args;           // pointer to u32 BO handles the command uses
  std::uint32_t cmd_count, arg_count;
  std::uint64_t seq;            // out: timeline point of the context's syncobj
};

struct GetInfo {
  std::uint32_t param, buffer_size;
  std::uint64_t buffer;
};

enum InfoParam : std::uint32_t {
  kQueryAieStatus = 0,
  kQueryAieMetadata = 1,
  kQueryAieVersion = 2,
  kQueryClockMetadata = 3,
  kQuerySensors = 4,
  kQueryHwContexts = 5,
  kQueryFirmwareVersion = 8,
  kGetPowerMode = 9,
  kQueryResourceInfo = 12,  // 13 is GET_FRAME_BOUNDARY_PREEMPT_STATE
};

// AMDXDNA_INVALID_ADDR: what GET_BO_INFO reports for an address that does not
// exist (yet): a user address before mmap, a device address of a SHMEM object
// in PASID mode before mmap, the mmap offset of a DEV object.
inline constexpr std::uint64_t kInvalidAddr = ~0ull;

struct AieTileMetadata {
  std::uint16_t row_count, row_start, dma_channel_count, lock_count, event_reg_count, pad[3];
};
struct AieMetadata {
  std::uint32_t col_size;
  std::uint16_t cols, rows;
  std::uint32_t version_major, version_minor;
  AieTileMetadata core, mem, shim;
};
struct Clock {
  char name[16];
  std::uint32_t freq_mhz, pad;
};
struct ClockMetadata {
  Clock mp_npu, h_clock;
};
struct Sensor {
  char label[64];
  std::uint32_t input, max, average, highest;
  char status[64];
  char units[16];
  std::int8_t unitm;
  std::uint8_t type, pad[6];
};
struct HwContextInfo {
  std::uint32_t context_id, start_col, num_col, pad;
  std::int64_t pid;
  std::uint64_t command_submissions, command_completions, migrations, preemptions, errors;
};
// GET_POWER_MODE: enum amdxdna_power_mode_type.
struct PowerMode {
  std::uint8_t power_mode;
  std::uint8_t pad[7];
};
inline constexpr const char* kPowerModeNames[] = {"default", "low", "medium", "high", "turbo"};
struct ResourceInfo {
  std::uint64_t npu_clk_max, npu_tops_max, npu_task_max, npu_tops_curr, npu_task_curr;
};
struct FirmwareVersion {
  std::uint32_t major, minor, patch, build;
};

// ERT command packet (exec buffer) header: state[3:0], extra CU masks[11:10],
// payload word count[22:12], opcode[27:23], type[31:28].
inline constexpr std::uint32_t kErtStartCu = 0;
inline constexpr std::uint32_t kErtStateNew = 1;
inline constexpr std::uint32_t kErtStateCompleted = 4;
inline constexpr std::uint32_t kErtStateError = 5;    // amdxdna_ctx.h: enum ert_cmd_state
inline constexpr std::uint32_t kErtStateAbort = 6;
inline constexpr std::uint32_t kErtStateTimeout = 8;
inline constexpr std::uint32_t kErtTypeCu = 3;
// mlir-aie's kernels expect opcode 3 in the first register-map slot.
inline constexpr std::uint64_t kMlirAieOpcode = 3;

namespace detail {
inline constexpr unsigned kDrmCommandBase = 0x40;  // include/uapi/drm/drm.h: DRM_COMMAND_BASE
constexpr unsigned long drm_iowr(unsigned nr, unsigned long size) {
  return (3ul << 30) | (size << 16) | ((unsigned long)'d' << 8) | nr;
}
}  // namespace detail

#define FLOPWATT_CHECK_IOCTL(num, index, type)                                               \
  static_assert(_IOC_SIZE(num) == sizeof(type), #type " does not match its ioctl's size");    \
  FLOPWATT_CHECK_LIBDRM_IOWR(num, index, type);                                              \
  static_assert((num) == detail::drm_iowr(detail::kDrmCommandBase + (index), sizeof(type)), #type " encoding")
FLOPWATT_CHECK_IOCTL(kIoctlCreateHwctx, 0, CreateHwctx);
FLOPWATT_CHECK_IOCTL(kIoctlDestroyHwctx, 1, DestroyHwctx);
FLOPWATT_CHECK_IOCTL(kIoctlConfigHwctx, 2, ConfigHwctx);
FLOPWATT_CHECK_IOCTL(kIoctlCreateBo, 3, CreateBo);
FLOPWATT_CHECK_IOCTL(kIoctlGetBoInfo, 4, GetBoInfo);
FLOPWATT_CHECK_IOCTL(kIoctlSyncBo, 5, SyncBo);
FLOPWATT_CHECK_IOCTL(kIoctlExecCmd, 6, ExecCmd);
FLOPWATT_CHECK_IOCTL(kIoctlGetInfo, 7, GetInfo);
#undef FLOPWATT_CHECK_IOCTL
static_assert(_IOC_SIZE(kIoctlSetState) == sizeof(GetInfo), "SET_STATE shares GET_INFO's layout");

// Query payloads have no ioctl number of their own; their sizes are the
// driver's (a mismatch makes GET_INFO fail with EINVAL).
static_assert(sizeof(QosInfo) == 24 && sizeof(QosInfoOutOfTree) == 32);
static_assert(sizeof(CuConfigHeader) == 8 && sizeof(CuConfig) == 8);
static_assert(sizeof(AieTileMetadata) == 16);
static_assert(sizeof(AieMetadata) == 64);
static_assert(sizeof(Clock) == 24 && sizeof(ClockMetadata) == 48);
static_assert(sizeof(Sensor) == 168);
static_assert(sizeof(HwContextInfo) == 64);
static_assert(sizeof(FirmwareVersion) == 16);
static_assert(sizeof(PowerMode) == 8 && sizeof(ResourceInfo) == 40);

}  // namespace flopwatt::npu::xdna
