// Shared helpers of the NPU tests: the shipped device files and temporary
// directories.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "npu/plan/device.h"

namespace flopwatt::npu::test {

inline std::string devices_dir() { return std::string(FLOPWATT_SOURCE_DIR) + "/npu/sim/devices"; }
inline DeviceDesc phoenix() { return load_device_file(devices_dir() + "/phoenix.json"); }
inline DeviceDesc strix() { return load_device_file(devices_dir() + "/strix.json"); }

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "flopwatt-npu-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

 private:
  std::string path_;
};

}  // namespace flopwatt::npu::test
