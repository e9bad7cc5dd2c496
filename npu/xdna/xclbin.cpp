#include "npu/xdna/xclbin.h"

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include <fmt/format.h>

#include "npu/xdna/byte_reader.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace {

constexpr char kMagic[8] = {'x', 'c', 'l', 'b', 'i', 'n', '2', '\0'};
constexpr std::uint64_t kHeaderAt = 8 + 4 + 28 + 256 + 8;  // after magic, signature length, reserved, key block, id
constexpr std::uint64_t kSectionsAt = kHeaderAt + 152;
constexpr std::uint64_t kSectionHeaderBytes = 40;
constexpr std::uint32_t kMaxSections = 0x10000;
constexpr std::uint64_t kPartitionBytes = 184, kPdiBytes = 96, kCdoGroupBytes = 96, kIpDataBytes = 80;

struct ArrayRef {
  std::uint32_t count, offset;
};

// `claimed` sums the bytes of every array read so far: in a real xclbin the
// arrays do not overlap, so together they fit in the section. Overlapping ones
// (each pdi's image and groups pointing at the whole section) would make the
// parse cubic in time and memory; they are refused once the sum exceeds it.
ArrayRef array_at(const ByteReader& r, std::uint64_t at, std::uint64_t elem, const std::string& what,
                  std::uint64_t* claimed = nullptr) {
  ArrayRef a{r.get<std::uint32_t>(at, what + " count"), r.get<std::uint32_t>(at + 4, what + " offset")};
  r.need(a.offset, std::uint64_t(a.count) * elem, what);
  if (claimed) {
    *claimed += std::uint64_t(a.count) * elem;
    if (*claimed > r.size())
      throw InputError(r.where(), what + " overlaps other arrays: together they claim more bytes than the section holds",
                       "the xclbin is corrupt; rebuild it");
  }
  return a;
}

AiePartition parse_partition(const ByteReader& r) {
  if (r.size() < kPartitionBytes)
    throw InputError(r.where(), fmt::format("section is {} bytes, an aie_partition needs {}", r.size(), kPartitionBytes),
                     "the xclbin is corrupt; rebuild it");
  AiePartition p;
  std::uint64_t claimed = kPartitionBytes;
  p.name = r.cstring(r.get<std::uint32_t>(4, "partition name offset"), "partition name");
  p.ops_per_cycle = r.get<std::uint32_t>(8, "operations_per_cycle");
  p.column_width = r.get<std::uint16_t>(32, "column_width");
  const ArrayRef cols = array_at(r, 40, 2, "start_columns", &claimed);
  for (std::uint32_t i = 0; i < cols.count; ++i) p.start_columns.push_back(r.get<std::uint16_t>(cols.offset + 2ull * i, "start column"));
  const ArrayRef pdis = array_at(r, 120, kPdiBytes, "aie_pdi array", &claimed);
  for (std::uint32_t i = 0; i < pdis.count; ++i) {
    const std::uint64_t at = pdis.offset + kPdiBytes * i;
    const std::string what = fmt::format("pdi[{}]", i);
    AiePdi pdi;
    const auto uuid = r.slice(at, 16, what + " uuid");
    std::copy(uuid.begin(), uuid.end(), pdi.uuid.begin());
    const ArrayRef img = array_at(r, at + 16, 1, what + " image", &claimed);
    const auto bytes = r.slice(img.offset, img.count, what + " image");
    pdi.image.assign(bytes.begin(), bytes.end());
    const ArrayRef groups = array_at(r, at + 24, kCdoGroupBytes, what + " cdo_groups", &claimed);
    for (std::uint32_t g = 0; g < groups.count; ++g) {
      const std::uint64_t ga = groups.offset + kCdoGroupBytes * g;
      const std::string gw = fmt::format("{} cdo_group[{}]", what, g);
      CdoGroup cg;
      cg.name = r.cstring(r.get<std::uint32_t>(ga, gw + " name offset"), gw + " name");
      cg.type = r.get<std::uint8_t>(ga + 4, gw + " type");
      cg.pdi_id = r.get<std::uint64_t>(ga + 8, gw + " pdi_id");
      const ArrayRef ids = array_at(r, ga + 16, 8, gw + " dpu_kernel_ids", &claimed);
      for (std::uint32_t k = 0; k < ids.count; ++k) cg.kernel_ids.push_back(r.get<std::uint64_t>(ids.offset + 8ull * k, gw + " kernel id"));
      array_at(r, ga + 24, 4, gw + " pre_cdo_groups", &claimed);
      pdi.groups.push_back(std::move(cg));
    }
    p.pdis.push_back(std::move(pdi));
  }
  return p;
}

std::vector<IpEntry> parse_ip_layout(const ByteReader& r) {
  const std::int32_t count = r.get<std::int32_t>(0, "ip_layout count");
  if (count < 0) throw InputError(r.where(), "negative ip_layout count", "the xclbin is corrupt; rebuild it");
  r.need(8, std::uint64_t(count) * kIpDataBytes, "ip_layout entries");
  std::vector<IpEntry> ips;
  for (std::int32_t i = 0; i < count; ++i) {
    const std::uint64_t at = 8 + kIpDataBytes * std::uint64_t(i);
    IpEntry ip;
    ip.type = r.get<std::uint32_t>(at, "ip type");
    ip.properties = r.get<std::uint32_t>(at + 4, "ip properties");
    ip.name = r.fixed_string(at + 16, 64, "ip name");
    ips.push_back(std::move(ip));
  }
  return ips;
}

// XRT's convert(): stoul base 0, "" is 0 (xclbin_parser.cpp). A value stoul
// refuses is an InputError here where XRT would throw std::invalid_argument.
std::uint64_t xml_number(const std::string& v, const std::string& where, const std::string& what) {
  if (v.empty()) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 0);
  if (end == v.c_str() || *end || errno == ERANGE || v[0] == '-')
    throw InputError(where + ": EMBEDDED_METADATA", fmt::format("{} \"{}\" is not a number", what, v),
                     "the xclbin is corrupt; rebuild it");
  return n;
}

// xdna-driver src/shim/hwctx.cpp xclbin_parser: per XML kernel, in XML
// order, its CUs with the PDI of its dpu_kernel_id; a kernel without one is
// skipped (ENOENT). A kernel's CUs are the IPs whose name matches
// ^(kernel):(.*)$ (xrt_xclbin.cpp copy_if_name_match), in IP_LAYOUT order:
// every prefix of an IP name that ends before a ':' is indexed once, so a
// hostile file's many kernels and IPs cost no product of the two.
void derive_cus(Xclbin& x) {
  std::unordered_map<std::string, std::vector<std::size_t>> ips_of;
  for (std::size_t i = 0; i < x.ips.size(); ++i) {
    const std::string& n = x.ips[i].name;
    for (std::size_t c = n.find(':'); c != std::string::npos; c = n.find(':', c + 1)) {
      auto& v = ips_of[n.substr(0, c)];
      if (v.empty() || v.back() != i) v.push_back(i);
    }
  }
  std::unordered_map<std::uint16_t, std::size_t> pdi_of_id;  // the first PDI listing each 16-bit id
  for (std::size_t p = x.partition.pdis.size(); p-- > 0;)
    for (const auto& g : x.partition.pdis[p].groups)
      for (auto id : g.kernel_ids)
        if (id <= 0xffff) pdi_of_id[std::uint16_t(id)] = p;
  // A name listed twice takes the first entry's properties each time, as
  // get_kernel_properties(kname) finds the first (xclbin_parser.cpp).
  std::unordered_map<std::string, const MetadataKernel*> first;
  for (const auto& k : x.metadata_kernels) first.emplace(k.name, &k);
  for (const auto& listed : x.metadata_kernels) {
    const MetadataKernel& k = *first.at(listed.name);
    const std::uint64_t id = xml_number(k.dpu_kernel_id, x.where, "kernel " + k.name + "'s dpu_kernel_id");
    const std::uint64_t func = xml_number(k.functional, x.where, "kernel " + k.name + "'s functional");
    const auto pdi = pdi_of_id.find(std::uint16_t(id));
    if (pdi == pdi_of_id.end()) {
      x.skipped_kernels.push_back({k.name, id});
      continue;
    }
    if (const auto ips = ips_of.find(k.name); ips != ips_of.end())
      for (std::size_t i : ips->second) x.cus.push_back({x.ips[i].name, k.name, std::uint8_t(func), id, pdi->second});
  }
}

std::string attribute(const std::string& element, const char* name) {
  const std::string key = std::string(" ") + name + "=\"";
  const auto p = element.find(key);
  if (p == std::string::npos) return {};
  const auto b = p + key.size();
  const auto e = element.find('"', b);
  return e == std::string::npos ? std::string() : element.substr(b, e - b);
}

// The kernels of the embedded XML: <kernel name=...> ... <extended-data
// functional=... dpu_kernel_id=.../> ... </kernel>. Tolerant: a design
// without it still runs from IP_LAYOUT.
std::vector<MetadataKernel> parse_metadata(std::span<const std::uint8_t> xml_bytes) {
  const std::string xml(reinterpret_cast<const char*>(xml_bytes.data()), xml_bytes.size());
  std::vector<MetadataKernel> v;
  std::size_t pos = 0;
  while ((pos = xml.find("<kernel ", pos)) != std::string::npos) {
    const auto open_end = xml.find('>', pos);
    if (open_end == std::string::npos) break;
    auto close = xml.find("</kernel>", open_end);
    if (close == std::string::npos) close = xml.size();
    const std::string head = xml.substr(pos, open_end - pos);
    const std::string body = xml.substr(open_end, close - open_end);
    MetadataKernel k;
    k.name = attribute(head, "name");
    if (const auto ext = body.find("<extended-data"); ext != std::string::npos) {
      const std::string ed = body.substr(ext, body.find('>', ext) - ext);
      k.functional = attribute(ed, "functional");
      k.dpu_kernel_id = attribute(ed, "dpu_kernel_id");
    }
    for (std::size_t a = body.find("<arg "); a != std::string::npos; a = body.find("<arg ", a + 1)) {
      const std::string el = body.substr(a, body.find('>', a) - a);
      auto num = [&](const char* attr) { return std::uint32_t(std::strtoul(attribute(el, attr).c_str(), nullptr, 0)); };
      KernelArg arg;
      arg.name = attribute(el, "name");
      arg.type = attribute(el, "type");
      arg.address_qualifier = num("addressQualifier");
      arg.id = num("id"), arg.size = num("size"), arg.offset = num("offset");
      k.args.push_back(std::move(arg));
    }
    if (!k.name.empty()) v.push_back(std::move(k));
    pos = close;
  }
  return v;
}

}  // namespace

const XclbinSection* Xclbin::section(std::uint32_t kind) const {
  for (const auto& s : sections)
    if (s.kind == kind) return &s;
  return nullptr;
}

const AiePdi* Xclbin::pdi_for(std::uint64_t kernel_id) const {
  const auto id16 = std::uint16_t(kernel_id);
  for (const auto& p : partition.pdis)
    for (const auto& g : p.groups)
      for (auto id : g.kernel_ids)
        if (id == id16) return &p;
  return nullptr;
}

const MetadataKernel* Xclbin::kernel(const std::string& name) const {
  for (const auto& k : metadata_kernels)
    if (k.name == name) return &k;
  return nullptr;
}

Xclbin parse_xclbin(std::span<const std::uint8_t> bytes, const std::string& where) {
  const ByteReader file(bytes, where);
  file.need(0, kSectionsAt, "xclbin header");
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw InputError(where, "not an xclbin (magic is not \"xclbin2\")", "pass the .xclbin that aiecc or xclbinutil wrote");
  Xclbin x;
  x.where = where;
  x.signature_length = file.get<std::uint32_t>(8, "signature length");
  x.length = file.get<std::uint64_t>(kHeaderAt, "header length");
  if (x.length < kSectionsAt || x.length > bytes.size())
    throw InputError(where, fmt::format("header says {} bytes, the file has {}", x.length, bytes.size()),
                     "the file is truncated or corrupt; rebuild it");
  const ByteReader r(bytes.first(std::size_t(x.length)), where);
  const std::uint32_t n = r.get<std::uint32_t>(kHeaderAt + 144, "section count");
  if (n > kMaxSections) throw InputError(where, fmt::format("{} sections (more than {})", n, kMaxSections), "the file is corrupt");
  r.need(kSectionsAt, std::uint64_t(n) * kSectionHeaderBytes, "section headers");
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t at = kSectionsAt + kSectionHeaderBytes * i;
    XclbinSection s;
    s.kind = r.get<std::uint32_t>(at, "section kind");
    s.name = r.fixed_string(at + 4, 16, "section name");
    s.offset = r.get<std::uint64_t>(at + 24, "section offset");
    s.size = r.get<std::uint64_t>(at + 32, "section size");
    r.need(s.offset, s.size, fmt::format("section {} '{}' (kind {})", i, s.name, s.kind));
    x.sections.push_back(std::move(s));
  }
  for (const auto& s : x.sections) {
    const auto data = r.slice(s.offset, s.size, "section");
    if (s.kind == kAiePartition && !x.has_partition) {
      x.partition = parse_partition(ByteReader(data, where + ": AIE_PARTITION"));
      x.has_partition = true;
    } else if (s.kind == kIpLayout) {
      x.ips = parse_ip_layout(ByteReader(data, where + ": IP_LAYOUT"));
    } else if (s.kind == kEmbeddedMetadata) {
      x.metadata_kernels = parse_metadata(data);
    }
  }
  derive_cus(x);
  return x;
}

RegisterMap register_map(const Xclbin& x, std::size_t cu) {
  const std::string fix = "rebuild the design with aiecc (see scripts/build-npu-artifacts.md)";
  const MetadataKernel* k = cu < x.cus.size() ? x.kernel(x.cus[cu].kernel) : nullptr;
  if (!k || k->args.empty()) return RegisterMap{};
  RegisterMap r;
  r.buffers.clear();
  r.bytes = 0;
  bool opcode = false, instr = false, ninstr = false;
  std::vector<const KernelArg*> pointers;
  for (const auto& a : k->args) {
    // An ERT packet carries at most 2046 register-map words after the CU mask.
    constexpr std::uint32_t kMaxBytes = 2046 * 4;
    if (a.offset >= kMaxBytes || a.size > kMaxBytes - a.offset)
      throw InputError(x.where, fmt::format("kernel {}'s argument '{}' ends beyond the {} bytes a command's register map holds",
                                            k->name, a.name, kMaxBytes),
                       fix);
    if (a.offset % 4 || a.size == 0 || a.size % 4)
      throw InputError(x.where, fmt::format("kernel {}'s argument '{}' sits at offset {:#x} with size {}, off the 32-bit "
                                            "register map",
                                            k->name, a.name, a.offset, a.size),
                       fix);
    const bool pointer = a.name == "instr" || (a.address_qualifier == 1 && a.name != "ninstr");
    if ((a.name == "opcode" || pointer) && a.size != 8)
      throw InputError(x.where, fmt::format("kernel {}'s argument '{}' is {} bytes, not the 8 of a 64-bit value", k->name,
                                            a.name, a.size),
                       fix);
    r.bytes = std::max(r.bytes, a.offset + a.size);
    if (a.name == "opcode") r.opcode = a.offset, opcode = true;
    else if (a.name == "instr") r.instr = a.offset, instr = true;
    else if (a.name == "ninstr") r.ninstr = a.offset, ninstr = true;
    else if (a.address_qualifier == 1) pointers.push_back(&a);
  }
  for (const auto& [have, name] : {std::pair{opcode, "opcode"}, std::pair{instr, "instr"}, std::pair{ninstr, "ninstr"}})
    if (!have)
      throw InputError(x.where, fmt::format("kernel {}'s register map in EMBEDDED_METADATA has no '{}' argument", k->name, name),
                       fix);
  std::sort(pointers.begin(), pointers.end(), [](const KernelArg* a, const KernelArg* b) { return a->offset < b->offset; });
  for (const KernelArg* a : pointers) r.buffers.push_back(a->offset);
  return r;
}

std::vector<const AiePdi*> cu_pdis(const Xclbin& x) {
  std::vector<const AiePdi*> v;
  for (const auto& cu : x.cus) v.push_back(&x.partition.pdis.at(cu.pdi));
  return v;
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open", "check the path and its permissions");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Xclbin load_xclbin(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  return parse_xclbin(bytes, path);
}

void require_npu_design(const Xclbin& x) {
  const XclbinVerdict v = judge_xclbin(x);
  if (!v.runnable)
    throw InputError(x.where, v.what + ": " + v.why,
                     "build an mlir-aie GEMM design with scripts/build-npu-designs (see scripts/build-npu-artifacts.md)");
}

}  // namespace flopwatt::npu::xdna
