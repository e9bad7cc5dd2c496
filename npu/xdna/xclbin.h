// The xclbin (AXLF) container of an NPU design, as mlir-aie's aiecc and
// XRT's xclbinutil write it (layout: XRT include/xrt/detail/xclbin.h):
//   "xclbin2\0", i32 signature length, 28 reserved bytes, 256-byte key block,
//   u64 unique id, a 152-byte header (u64 length ... u32 section count at
//   +144), then 40-byte section headers {u32 kind; char name[16]; u64 offset;
//   u64 size}.
// The NPU needs AIE_PARTITION (32): operations per cycle, column width, start
// columns and the PDIs with the DPU kernel ids each serves; IP_LAYOUT (8)
// names the compute units, their function and kernel id; EMBEDDED_METADATA
// (2) is XML that carries the same kernel facts for older toolchains.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace flopwatt::npu::xdna {

enum SectionKind : std::uint32_t { kEmbeddedMetadata = 2, kIpLayout = 8, kAiePartition = 32 };

struct XclbinSection {
  std::uint32_t kind = 0;
  std::string name;
  std::uint64_t offset = 0, size = 0;
};

struct CdoGroup {
  std::string name;
  std::uint8_t type = 0;
  std::uint64_t pdi_id = 0;
  std::vector<std::uint64_t> kernel_ids;
};

struct AiePdi {
  std::array<std::uint8_t, 16> uuid{};
  std::vector<std::uint8_t> image;
  std::vector<CdoGroup> groups;
};

struct AiePartition {
  std::string name;
  std::uint32_t ops_per_cycle = 0;
  std::uint16_t column_width = 0;
  std::vector<std::uint16_t> start_columns;
  std::vector<AiePdi> pdis;
};

struct ComputeUnit {  // an IP_LAYOUT entry of type PS kernel, subtype DPU
  std::string name;   // "MLIR_AIE:MLIRAIE"
  std::uint8_t functional = 0;
  std::uint16_t kernel_id = 0;
};

struct KernelArg {  // <arg name= addressQualifier= id= size= offset= type=/>
  std::string name, type;
  std::uint32_t address_qualifier = 0;  // 0 a scalar, 1 a pointer to global memory
  std::uint32_t id = 0, size = 0, offset = 0;
};

struct MetadataKernel {  // from EMBEDDED_METADATA
  std::string name, functional, dpu_kernel_id;
  std::vector<KernelArg> args;  // the kernel's register map
};

// Where a START_CU payload puts the kernel's arguments: byte offsets into the
// register map that follows the CU mask. The default is mlir-aie's layout
// (opcode u64 at 0x0, instruction buffer at 0x8, its word count at 0x10, data
// buffers from 0x14), for designs whose metadata lists no arguments.
struct RegisterMap {
  std::uint32_t opcode = 0x0, instr = 0x8, ninstr = 0x10;
  std::vector<std::uint32_t> buffers{0x14, 0x1c, 0x24};  // the data pointers, in argument order
  std::uint32_t bytes = 0x2c;                            // the register map's size
};

struct Xclbin {
  std::string where;
  std::uint64_t length = 0;
  std::uint32_t signature_length = 0;
  std::vector<XclbinSection> sections;
  bool has_partition = false;
  AiePartition partition;
  std::vector<ComputeUnit> cus;
  std::vector<MetadataKernel> metadata_kernels;

  const XclbinSection* section(std::uint32_t kind) const;
  // The PDI whose CDO groups list kernel_id; nullptr when none.
  const AiePdi* pdi_for(std::uint64_t kernel_id) const;
};

// Parses an xclbin; throws InputError(where, ...) for anything malformed:
// wrong magic, truncation, section or array offsets past the end.
Xclbin parse_xclbin(std::span<const std::uint8_t> bytes, const std::string& where);
Xclbin load_xclbin(const std::string& path);
// Checks what the NPU flow needs: an AIE_PARTITION with a PDI, at least one
// compute unit, a PDI for every compute unit (cu_pdis) and a usable register
// map for each (register_map). Throws InputError.
void require_npu_design(const Xclbin& x);

// The PDI of each compute unit, in IP_LAYOUT order (a CU's index there is its
// index in CONFIG_CU and its bit in a command's CU mask): the PDI whose CDO
// groups list the CU's kernel id, as XRT's shim pairs them. InputError when a
// CU has none, since CONFIG_CU needs a PDI for every CU it names.
std::vector<const AiePdi*> cu_pdis(const Xclbin& x);

// The register map of compute unit `cu`: from the <arg> list of its kernel in
// EMBEDDED_METADATA (the kernel named before the ':' of the CU's name, or the
// only one): "opcode", "instr", "ninstr", then every other pointer argument
// by offset. InputError when the list lacks one of the three or places an
// argument off a 32-bit boundary.
RegisterMap register_map(const Xclbin& x, std::size_t cu);

std::vector<std::uint8_t> read_file_bytes(const std::string& path);  // InputError when unreadable

}  // namespace flopwatt::npu::xdna
