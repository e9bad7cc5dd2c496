// The calls the amdxdna backend makes on an open accel node, behind one small
// interface so that everything above it (buffers, contexts, command packets,
// the GEMM flow) runs in tests against an in-memory fake of the driver.
#pragma once
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace flopwatt::npu::xdna {

struct DrmVersionInfo {
  std::string name, date, desc;
  int major = 0, minor = 0, patch = 0;
};

class DriverApi {
 public:
  virtual ~DriverApi() = default;
  // ioctl(2) semantics: 0 on success, else -1 with the error in errno_out.
  virtual int ioctl(unsigned long request, void* arg, int* errno_out) = 0;
  virtual void* mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) = 0;
  virtual void munmap(void* p, std::size_t size) = 0;
  // Waits until `point` on the timeline syncobj signals; 0 or -errno.
  virtual int syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t timeout_ns) = 0;
  // Releases a syncobj handle (DRM_IOCTL_SYNCOBJ_DESTROY); 0 or -errno.
  virtual int syncobj_destroy(std::uint32_t syncobj) = 0;
  virtual void gem_close(std::uint32_t handle) = 0;
  virtual std::optional<DrmVersionInfo> version(int* errno_out) = 0;
  virtual std::string path() const = 0;
};

// Which errors an ioctl is simply reissued after: EINTR only. libdrm's
// drmIoctl also reissues EAGAIN, but amdxdna's CREATE_BO answers EAGAIN when a
// DEV buffer does not fit in the device heap, which stays true until the
// caller grows the heap: reissuing it would never end.
constexpr bool ioctl_restartable(int err) { return err == EINTR; }

// Opens `path` read-write; nullptr with errno_out set on failure.
std::unique_ptr<DriverApi> open_drm_node(const std::string& path, int* errno_out);
// Empty when built with libdrm; otherwise why no device can be opened
// (driver_api_none.cpp, CMake option FLOPWATT_WITH_NPU_DEVICE).
std::string drm_support_missing();

}  // namespace flopwatt::npu::xdna
