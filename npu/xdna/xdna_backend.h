// Backend npu:xdna: GEMMs on a real XDNA NPU through the amdxdna driver and
// prebuilt designs (artifacts.h). Per call: convert and pad A and B to bf16
// in device buffers (copy_in), submit one START_CU command (submit), wait for
// it (compute), read C back and apply alpha and beta (copy_out). Loading a
// design that is not resident - creating its hardware context, evicting the
// least recently used one when the device holds no more - is reconfigure,
// kept apart from the rest. Without a device or artifacts it is unavailable
// and says exactly why.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "npu/xdna/artifacts.h"
#include "npu/xdna/discovery.h"
#include "npu/xdna/driver_api.h"
#include "npu/xdna/fork_guard.h"
#include "workloads/backend.h"

namespace flopwatt::npu::xdna {

// per-shape: the smallest design covering each GEMM; single: one design (the
// largest for the device) for every GEMM, padded, so no reconfiguration.
enum class DesignMode { PerShape, Single };
// FLOPWATT_NPU_DESIGN: unset or "per-shape", "single"; nullopt for anything else.
std::optional<DesignMode> design_mode_from_env();

struct XdnaBackendConfig {
  std::string root = default_root();
  std::string artifacts_dir = default_artifacts_dir();
  NodeOpener opener = open_drm_node;
  std::int64_t timeout_ns = 10'000'000'000;
  std::optional<DesignMode> design_mode = design_mode_from_env();  // nullopt: a bad FLOPWATT_NPU_DESIGN
};

class XdnaBackend : public Backend {
 public:
  explicit XdnaBackend(XdnaBackendConfig cfg = {});
  ~XdnaBackend() override;

  std::string name() const override { return "npu:xdna"; }
  // Opens the device on first use to learn its generation and check the
  // manifest's designs against it.
  Availability availability() const override;
  bool supports(const GemmDesc& d) const override;
  void gemm(const GemmDesc& d, const void* A, const void* B, void* C) override;
  DType compute_dtype(const GemmDesc&) const override { return DType::BF16; }  // bf16 designs only
  std::optional<Breakdown> last_breakdown() const override { return last_; }
  std::vector<std::pair<std::string, std::string>> notes() const override;

  const XdnaDiscovery& discovery() const { return disc_; }
  const std::string& generation() const { return generation_; }
  // Hardware contexts this backend keeps at most (the device's limit).
  std::uint32_t context_capacity() const;

 private:
  struct Parsed;
  struct Loaded;
  struct Device;
  // The design for g under the design mode, or nullptr.
  const ArtifactDesign* design_for(const GemmDesc& g) const;
  Loaded& load(const ArtifactDesign& d, double* seconds);
  void open_device() const;  // throws std::runtime_error
  void evict_lru();
  void drop(const std::string& design_name);

  XdnaBackendConfig cfg_;
  XdnaDiscovery disc_;
  std::optional<ArtifactSet> artifacts_;
  std::string artifacts_problem_;
  // The device is opened lazily by const queries (availability, notes) too.
  mutable std::string generation_;
  mutable std::unique_ptr<Device> dev_;
  mutable std::string open_problem_;
  std::list<std::unique_ptr<Loaded>> loaded_;  // most recently used first
  std::map<std::string, std::shared_ptr<const Parsed>> parsed_;  // design files, read once
  std::optional<Breakdown> last_;
  // Gives the contexts back before flopwatt forks (fork_guard.h); the next
  // GEMM re-creates them. Declared last: it goes before loaded_.
  ForkReleaser fork_releaser_;
};

}  // namespace flopwatt::npu::xdna
