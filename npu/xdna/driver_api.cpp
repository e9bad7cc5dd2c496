#include "npu/xdna/driver_api.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include <xf86drm.h>

namespace flopwatt::npu::xdna {

namespace {

class DrmNode : public DriverApi {
 public:
  DrmNode(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~DrmNode() override { ::close(fd_); }

  int ioctl(unsigned long request, void* arg, int* errno_out) override {
    int r;
    do {
      r = ::ioctl(fd_, request, arg);
    } while (r == -1 && ioctl_restartable(errno));
    if (r == -1 && errno_out) *errno_out = errno;
    return r == -1 ? -1 : 0;
  }
  void* mmap(std::size_t size, std::uint64_t offset, void* hint, int* errno_out) override {
    void* p = ::mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED | (hint ? MAP_FIXED : 0), fd_, off_t(offset));
    if (p == MAP_FAILED) {
      if (errno_out) *errno_out = errno;
      return nullptr;
    }
    return p;
  }
  void munmap(void* p, std::size_t size) override { ::munmap(p, size); }
  int syncobj_wait(std::uint32_t syncobj, std::uint64_t point, std::int64_t timeout_ns) override {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::int64_t abs = std::int64_t(now.tv_sec) * 1000000000 + now.tv_nsec + timeout_ns;
    std::uint32_t h = syncobj;
    std::uint64_t pt = point;
    return drmSyncobjTimelineWait(fd_, &h, &pt, 1, abs, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, nullptr);
  }
  int syncobj_destroy(std::uint32_t syncobj) override { return drmSyncobjDestroy(fd_, syncobj) == 0 ? 0 : -errno; }
  void gem_close(std::uint32_t handle) override {
    drm_gem_close c{handle, 0};
    ::ioctl(fd_, DRM_IOCTL_GEM_CLOSE, &c);
  }
  std::optional<DrmVersionInfo> version(int* errno_out) override {
    errno = 0;
    drmVersionPtr v = drmGetVersion(fd_);
    if (!v) {
      if (errno_out) *errno_out = errno ? errno : ENOTTY;
      return std::nullopt;
    }
    DrmVersionInfo info;
    info.name.assign(v->name ? v->name : "", v->name ? std::size_t(v->name_len) : 0);
    info.date.assign(v->date ? v->date : "", v->date ? std::size_t(v->date_len) : 0);
    info.desc.assign(v->desc ? v->desc : "", v->desc ? std::size_t(v->desc_len) : 0);
    info.major = v->version_major, info.minor = v->version_minor, info.patch = v->version_patchlevel;
    drmFreeVersion(v);
    return info;
  }
  std::string path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

std::unique_ptr<DriverApi> open_drm_node(const std::string& path, int* errno_out) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno_out) *errno_out = errno;
    return nullptr;
  }
  return std::make_unique<DrmNode>(fd, path);
}

std::string drm_support_missing() { return {}; }

}  // namespace flopwatt::npu::xdna
