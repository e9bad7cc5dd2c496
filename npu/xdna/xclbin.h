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

struct IpEntry {  // one IP_LAYOUT entry, whatever its type
  std::string name;  // "MLIR_AIE:MLIRAIE", "XDP_KERNEL:IPUV1CNN", "vadd:vadd_1"
  std::uint32_t type = 0, properties = 0;
};

// A compute unit as XRT lists it (XRT src/runtime_src/core/common/api/
// xrt_xclbin.cpp init_kernels and copy_if_name_match; xdna-driver
// src/shim/hwctx.cpp xclbin_parser): for each kernel of EMBEDDED_METADATA in
// XML order, every IP_LAYOUT entry named "<kernel>:..." whatever its IP type,
// in IP_LAYOUT order, all sharing the kernel's functional, dpu_kernel_id and
// the PDI that id selects. A CU's index in this list is its index in
// CONFIG_CU and its bit in a command's CU mask.
struct ComputeUnit {
  std::string name;    // the IP_LAYOUT name
  std::string kernel;  // the EMBEDDED_METADATA kernel it belongs to
  std::uint8_t functional = 0;
  std::uint64_t kernel_id = 0;  // the kernel's dpu_kernel_id, whole
  std::size_t pdi = 0;          // index into partition.pdis
};

// A kernel of EMBEDDED_METADATA that XRT's shim leaves out of the CU list
// because no PDI serves its dpu_kernel_id (a PL kernel such as "vadd").
struct SkippedKernel {
  std::string name;
  std::uint64_t kernel_id = 0;
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
  std::vector<IpEntry> ips;
  std::vector<MetadataKernel> metadata_kernels;
  std::vector<ComputeUnit> cus;  // derived from the two above and the partition, as XRT does
  std::vector<SkippedKernel> skipped_kernels;

  const XclbinSection* section(std::uint32_t kind) const;
  // The PDI whose CDO groups list kernel_id; nullptr when none. XRT's shim
  // looks a kernel up by its id cast to 16 bits (xdna-driver src/shim/hwctx.h
  // get_pdi(..., uint16_t kernel_id)), and so does this.
  const AiePdi* pdi_for(std::uint64_t kernel_id) const;
  const MetadataKernel* kernel(const std::string& name) const;
};

// Parses an xclbin; throws InputError(where, ...) for anything malformed:
// wrong magic, truncation, section or array offsets past the end.
Xclbin parse_xclbin(std::span<const std::uint8_t> bytes, const std::string& where);
Xclbin load_xclbin(const std::string& path);
// What an xclbin is and whether flopwatt can run it: the one judgement that
// `npu info`, the backend and the self-test read. flopwatt drives mlir-aie's
// kernel convention (arguments opcode, instr, ninstr, then data buffers);
// RyzenAI's DPU overlays name theirs instruct/nistruct and take instruction
// streams the Vitis AI compiler makes per model.
struct XclbinVerdict {
  std::string what;            // "mlir-aie design (kernel MLIR_AIE; 1 compute unit)"
  bool runnable = false;
  std::string why;             // when not runnable
  std::size_t command_cu = 0;  // when runnable: the CU commands go to
};
XclbinVerdict judge_xclbin(const Xclbin& x);

// Throws InputError(x.where, verdict.why) unless judge_xclbin finds it runnable.
void require_npu_design(const Xclbin& x);

// The PDI of each compute unit, in the order of x.cus (every CU has one: XRT
// leaves out the kernels no PDI serves).
std::vector<const AiePdi*> cu_pdis(const Xclbin& x);

// The register map of compute unit `cu`: from the <arg> list of its kernel in
// EMBEDDED_METADATA: "opcode", "instr", "ninstr", then every other pointer
// argument by offset; mlir-aie's layout when the kernel lists no arguments.
// InputError when the list lacks one of the three or places an argument off a
// 32-bit boundary.
RegisterMap register_map(const Xclbin& x, std::size_t cu);

std::vector<std::uint8_t> read_file_bytes(const std::string& path);  // InputError when unreadable

}  // namespace flopwatt::npu::xdna
