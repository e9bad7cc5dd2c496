// A directory of prebuilt GEMM designs for the real NPU, described by
// manifest.json (schema "flopwatt-npu-artifacts/1"):
//   { "schema": "flopwatt-npu-artifacts/1",
//     "designs": [ { "name": "gemm_256x768x768", "device": "npu1",
//                    "xclbin": "gemm.xclbin", "insts": "insts.bin",
//                    "ctrl_elf": "gemm.elf" (optional), "kernel": "MLIR_AIE",
//                    "M": 256, "N": 768, "K": 768,
//                    "tile": {"m": 64, "k": 32, "n": 64},
//                    "array": {"rows": 4, "cols": 4},
//                    "dtype_in": "bf16", "dtype_out": "fp32" } ] }
// A design computes exactly M x N x K (the runtime sequence is compiled for
// it); smaller GEMMs are zero-padded into the smallest design that covers
// them. scripts/build-npu-designs builds them with mlir-aie and writes the
// manifest (also "mlir_aie_version", "built_by"; ignored here); a file name
// carrying mlir-aie's MxKxN suffix must agree with the manifest's M, N, K.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "npu/xdna/insts.h"
#include "workloads/backend.h"

namespace flopwatt::npu::xdna {

struct ArtifactDesign {
  std::string name, device, kernel;
  std::string xclbin, insts, ctrl_elf;  // absolute paths
  std::int64_t M = 0, N = 0, K = 0;
  int m = 0, k = 0, n = 0, rows = 0, cols = 0;
  DType dtype_in = DType::BF16, dtype_out = DType::F32;
};

struct ArtifactSet {
  std::string dir;
  std::vector<ArtifactDesign> designs;
};

// Throws InputError naming the manifest and the field for anything missing or
// malformed, or a listed file that does not exist.
ArtifactSet load_artifacts(const std::string& dir);
// Parses every file of a design (xclbin, instruction stream, ELF) and checks
// them against the manifest; throws InputError.
void validate_design(const ArtifactDesign& d);
// The instruction stream's AIE generation against the design's device; throws InputError.
void check_insts_device(const ArtifactDesign& d, const InstStream& s);
// The smallest design for `device` ("npu1", "npu4", ...; empty: any) covering
// d's shape with its output type; nullptr when none.
const ArtifactDesign* pick_design(const ArtifactSet& set, const GemmDesc& d, const std::string& device);
// $FLOPWATT_NPU_ARTIFACTS, else <binary>/../share/flopwatt/npu/artifacts.
std::string default_artifacts_dir();

}  // namespace flopwatt::npu::xdna
