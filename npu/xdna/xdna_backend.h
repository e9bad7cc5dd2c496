// Backend npu:xdna: GEMMs on a real XDNA NPU through the amdxdna driver and
// prebuilt designs (artifacts.h). Per call: convert and pad A and B to bf16
// in device buffers (copy_in), submit one START_CU command and wait
// (submit, compute), read C back and apply alpha and beta (copy_out). A design
// is loaded into its own hardware context the first time it is needed
// (reconfigure). Without a device or artifacts it is unavailable and says
// exactly why.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "npu/xdna/artifacts.h"
#include "npu/xdna/discovery.h"
#include "workloads/backend.h"

namespace flopwatt::npu::xdna {

struct XdnaBackendConfig {
  std::string root = default_root();
  std::string artifacts_dir = default_artifacts_dir();
  NodeOpener opener = open_drm_node;
  std::int64_t timeout_ns = 10'000'000'000;
};

class XdnaBackend : public Backend {
 public:
  explicit XdnaBackend(XdnaBackendConfig cfg = {});
  ~XdnaBackend() override;

  std::string name() const override { return "npu:xdna"; }
  Availability availability() const override;
  bool supports(const GemmDesc& d) const override;
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override;
  DType compute_dtype(const GemmDesc&) const override { return DType::BF16; }  // bf16 designs only
  std::optional<Breakdown> last_breakdown() const override { return last_; }
  std::vector<std::pair<std::string, std::string>> notes() const override;

  const XdnaDiscovery& discovery() const { return disc_; }
  const std::string& generation() const { return generation_; }

 private:
  struct Loaded;
  struct Device;
  Loaded& load(const ArtifactDesign& d, double* seconds);

  XdnaBackendConfig cfg_;
  XdnaDiscovery disc_;
  std::optional<ArtifactSet> artifacts_;
  std::string artifacts_problem_;
  std::string generation_;
  std::unique_ptr<Device> dev_;
  std::map<std::string, std::unique_ptr<Loaded>> loaded_;
  std::optional<Breakdown> last_;
};

}  // namespace flopwatt::npu::xdna
