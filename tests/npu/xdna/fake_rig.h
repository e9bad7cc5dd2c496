// A fake amdxdna device for tests: a fixture root with an accel node, a
// FakeDriver behind the backend's opener, and one xclbin (with a PDI of its
// own, which is how the fake firmware tells designs apart) per design, listed
// in a manifest.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "npu/xdna/xdna_backend.h"
#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"
#include "tests/npu/xdna/fake_driver.h"

namespace flopwatt::npu::xdna::test {

struct DesignSpec {
  std::int64_t M, N, K;
  DType out = DType::F32;
  std::string device = "npu1";
  std::string file_suffix = {};  // mlir-aie's MxKxN[_mxkxn] in the xclbin's name, when set
  bool second_cu = false;        // a second compute unit with a PDI (and fake design) of its own
  std::uint32_t buffer_offset = 0x14;  // where the kernel's register map puts A (B, C follow)
};

struct Rig {
  ::flopwatt::npu::test::TempDir root, art;
  FakeDriver* driver = nullptr;  // owned by the backend once opened
  FakeOptions options;
  // What the fake had open when the backend let go of it.
  std::shared_ptr<FakeLedger> ledger = std::make_shared<FakeLedger>();
  std::vector<DesignSpec> designs{{256, 128, 64}};
  std::optional<DesignMode> mode = DesignMode::PerShape;
  XdnaBackendConfig config_from_env() {
    auto c = config();
    c.design_mode = XdnaBackendConfig{}.design_mode;
    return c;
  }
  XdnaBackendConfig config() {
    root.write("dev/accel/accel0", "");
    nlohmann::json list = nlohmann::json::array();
    std::vector<FakeDesign> fakes;
    for (std::size_t i = 0; i < designs.size(); ++i) {
      const auto& s = designs[i];
      XclbinSpec xs;
      xs.pdi.push_back(std::uint8_t(i));  // the firmware tells designs apart by their PDI
      xs.first_buffer_offset = s.buffer_offset;
      if (s.second_cu) xs.more_cus.push_back({"SECOND:SECOND", 0x902, 1, {std::uint8_t(0x80 + i)}});
      const auto x = build_xclbin(xs);
      const std::string xname =
          (s.file_suffix.empty() ? std::string("gemm").append(std::to_string(i)) : std::string("final_").append(s.file_suffix))
              .append(".xclbin");
      art.write(xname, std::string(x.begin(), x.end()));
      const auto w = build_txn(4, 3);
      art.write("insts.bin", std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
      list.push_back({{"name", std::string("g").append(std::to_string(i))}, {"device", s.device}, {"xclbin", xname}, {"insts", "insts.bin"},
                      {"M", s.M}, {"N", s.N}, {"K", s.K}, {"tile", {{"m", 8}, {"k", 8}, {"n", 8}}},
                      {"array", {{"rows", 4}, {"cols", 4}}}, {"dtype_in", "bf16"},
                      {"dtype_out", std::string(to_string(s.out))}});
      fakes.push_back({s.M, s.N, s.K, s.out, xs.pdi, s.buffer_offset});
      for (const auto& more : xs.more_cus) fakes.push_back({s.M, s.N, s.K, s.out, more.pdi, s.buffer_offset});
    }
    art.write("manifest.json", nlohmann::json{{"schema", "flopwatt-npu-artifacts/1"}, {"designs", list}}.dump());
    XdnaBackendConfig c;
    c.root = root.path();
    c.artifacts_dir = art.path();
    c.design_mode = mode;
    c.opener = [this, fakes](const std::string&, int*) -> std::unique_ptr<DriverApi> {
      FakeOptions o = options;
      o.ledger = ledger;
      auto p = std::make_unique<FakeDriver>(fakes, o);
      driver = p.get();
      return p;
    };
    return c;
  }
};

}  // namespace flopwatt::npu::xdna::test
