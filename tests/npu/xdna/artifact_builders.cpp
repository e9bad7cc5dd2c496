#include "tests/npu/xdna/artifact_builders.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace flopwatt::npu::xdna::test {

namespace {

struct Buf {
  std::vector<std::uint8_t> b;
  template <class T>
  void put(std::uint64_t at, T v) {
    if (b.size() < at + sizeof(T)) b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
  }
  void bytes(std::uint64_t at, const void* p, std::size_t n) {
    if (b.size() < at + n) b.resize(at + n);
    std::memcpy(b.data() + at, p, n);
  }
  std::uint64_t align8() {
    b.resize((b.size() + 7) / 8 * 8);
    return b.size();
  }
};

std::vector<XclbinCu> all_cus(const XclbinSpec& s) {
  std::vector<XclbinCu> v{{s.cu_name, s.kernel_id, s.functional, s.pdi}};
  v.insert(v.end(), s.more_cus.begin(), s.more_cus.end());
  return v;
}

std::vector<XclbinCu> with_pdi(const XclbinSpec& s) {
  std::vector<XclbinCu> v;
  for (const auto& c : all_cus(s))
    if (!c.pdi.empty()) v.push_back(c);
  return v;
}

std::string kernel_of(const std::string& cu) { return cu.substr(0, cu.find(':')); }

std::vector<std::uint8_t> partition_section(const XclbinSpec& s) {
  const auto cus = with_pdi(s);
  Buf p;
  p.b.resize(184);
  p.put<std::uint32_t>(8, s.ops_per_cycle);
  p.put<std::uint16_t>(32, s.column_width);
  // start columns: one entry
  std::uint64_t at = p.align8();
  p.put<std::uint16_t>(at, 1);
  p.put<std::uint32_t>(40, 1);
  p.put<std::uint32_t>(44, std::uint32_t(at));
  // one PDI per compute unit, each with one CDO group naming its kernel id
  const std::uint64_t pdis = p.align8();
  p.b.resize(pdis + 96 * cus.size());
  p.put<std::uint32_t>(120, std::uint32_t(cus.size()));
  p.put<std::uint32_t>(124, std::uint32_t(pdis));
  for (std::size_t c = 0; c < cus.size(); ++c) {
    const std::uint64_t pdi = pdis + 96 * c;
    for (int i = 0; i < 16; ++i) p.put<std::uint8_t>(pdi + i, std::uint8_t(i + 1 + 16 * c));
    const std::uint64_t img = p.align8();
    p.bytes(img, cus[c].pdi.data(), cus[c].pdi.size());
    p.put<std::uint32_t>(pdi + 16, std::uint32_t(cus[c].pdi.size()));
    p.put<std::uint32_t>(pdi + 20, std::uint32_t(img));
    const std::uint64_t grp = p.align8();
    p.b.resize(grp + 96);
    p.put<std::uint32_t>(pdi + 24, 1);
    p.put<std::uint32_t>(pdi + 28, std::uint32_t(grp));
    p.put<std::uint8_t>(grp + 4, 1);
    p.put<std::uint64_t>(grp + 8, 0x42 + c);
    const std::uint64_t ids = p.align8();
    p.put<std::uint64_t>(ids, cus[c].kernel_id);
    p.put<std::uint32_t>(grp + 16, 1);
    p.put<std::uint32_t>(grp + 20, std::uint32_t(ids));
    const std::uint64_t gname = p.b.size();
    p.bytes(gname, "DPU", 4);
    p.put<std::uint32_t>(grp, std::uint32_t(gname));
  }
  const std::uint64_t pname = p.b.size();
  p.bytes(pname, "QoS", 4);
  p.put<std::uint32_t>(4, std::uint32_t(pname));
  p.align8();
  return p.b;
}

std::vector<std::uint8_t> ip_layout_section(const XclbinSpec& s) {
  const auto cus = all_cus(s);
  Buf p;
  p.put<std::int32_t>(0, std::int32_t(cus.size()));
  p.b.resize(8 + 80 * cus.size());
  for (std::size_t c = 0; c < cus.size(); ++c) {
    const std::uint64_t e = 8 + 80 * c;
    const std::uint32_t props =
        // the 12-bit id field keeps only the low bits of a longer id, as in RyzenAI's overlays
        (cus[c].subtype & 3) | (std::uint32_t(cus[c].functional & 3) << 4) | (std::uint32_t(cus[c].kernel_id & 0xfff) << 16);
    p.put<std::uint32_t>(e, cus[c].ip_type);
    p.put<std::uint32_t>(e + 4, props);
    p.bytes(e + 16, cus[c].name.c_str(), std::min<std::size_t>(cus[c].name.size() + 1, 64));
  }
  return p.b;
}

std::string kernel_args(const XclbinSpec& s) {
  std::string args;
  if (!s.metadata_args) return args;
  auto arg = [&](const std::string& name, int qualifier, int n, int size, std::uint32_t offset, const char* type) {
    char off[16];
    std::snprintf(off, sizeof off, "0x%x", offset);
    args += "<arg name=\"" + name + "\" addressQualifier=\"" + std::to_string(qualifier) + "\" id=\"" + std::to_string(n) +
            "\" size=\"0x" + std::to_string(size) + "\" offset=\"" + off + "\" type=\"" + type + "\"/>";
  };
  arg("opcode", 0, 0, 8, 0x0, "uint64_t");
  arg(s.overlay_args ? "instruct" : "instr", 1, 1, 8, 0x8, "char *");
  arg(s.overlay_args ? "nistruct" : "ninstr", 0, 2, 4, 0x10, "uint32_t");
  for (int i = 0; i < 5; ++i) arg("bo" + std::to_string(i), 1, 3 + i, 8, s.first_buffer_offset + 8 * std::uint32_t(i), "void*");
  return args;
}

std::string metadata_xml(const XclbinSpec& s) {
  std::string kernels;
  std::vector<std::string> seen;
  for (const auto& c : all_cus(s)) {
    const std::string k = kernel_of(c.name);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(k);
    char id[24];
    std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(c.kernel_id));
    kernels += "<kernel name=\"" + k + "\" language=\"c\" type=\"dpu\"><extended-data subtype=\"DPU\" functional=\"" +
               std::to_string(c.functional) + "\" dpu_kernel_id=\"" + id + "\"/>" + kernel_args(s) + "</kernel>";
  }
  return "<?xml version=\"1.0\"?><project><platform><device><core>" + kernels + "</core></device></platform></project>";
}

}  // namespace

std::vector<std::uint8_t> build_xclbin(const XclbinSpec& s, XclbinLayout* layout) {
  struct Sec {
    std::uint32_t kind;
    const char* name;
    std::vector<std::uint8_t> data;
  };
  std::vector<Sec> secs;
  secs.push_back({32, "aie_partition", partition_section(s)});
  if (s.ip_layout) secs.push_back({8, "ip_layout", ip_layout_section(s)});
  if (s.metadata) {
    const std::string x = metadata_xml(s);
    secs.push_back({2, "metadata", std::vector<std::uint8_t>(x.begin(), x.end())});
  }
  Buf f;
  f.bytes(0, "xclbin2", 8);
  f.put<std::int32_t>(8, -1);
  for (int i = 12; i < 40; ++i) f.put<std::uint8_t>(i, 0xff);
  f.b.resize(456 + 40 * secs.size());
  f.put<std::uint32_t>(304 + 144, std::uint32_t(secs.size()));
  for (std::size_t i = 0; i < secs.size(); ++i) {
    const std::uint64_t at = f.align8();
    f.bytes(at, secs[i].data.data(), secs[i].data.size());
    const std::uint64_t h = 456 + 40 * i;
    f.put<std::uint32_t>(h, secs[i].kind);
    f.bytes(h + 4, secs[i].name, std::strlen(secs[i].name) + 1);
    f.put<std::uint64_t>(h + 24, at);
    f.put<std::uint64_t>(h + 32, secs[i].data.size());
    if (layout) {
      if (secs[i].kind == 32) layout->partition_offset = at;
      if (secs[i].kind == 8) layout->ip_layout_offset = at;
      if (secs[i].kind == 2) layout->metadata_offset = at;
    }
  }
  f.align8();
  f.put<std::uint64_t>(304, f.b.size());
  return f.b;
}

std::vector<std::uint32_t> build_txn(int n_writes, int patches, int dev_gen) {
  std::vector<std::uint32_t> t(4, 0);
  std::uint32_t ops = 0;
  for (int i = 0; i < n_writes; ++i, ++ops) {
    const std::uint32_t w[] = {0, 0, 0x1d004u + 32u * i, 0, std::uint32_t(i), 24};
    t.insert(t.end(), std::begin(w), std::end(w));
  }
  {  // BLOCKWRITE of 3 payload words
    const std::uint32_t w[] = {1, 0, 0x1d000, 7 * 4, 10, 11, 12};
    t.insert(t.end(), std::begin(w), std::end(w));
    ++ops;
  }
  for (int a = 0; a < patches; ++a, ++ops) {
    std::uint32_t w[12] = {0x81, 48, 0, 0, 0, 0, 0x1d004, 0, std::uint32_t(a), 0, 0, 0};
    t.insert(t.end(), std::begin(w), std::end(w));
  }
  {  // TCT sync
    const std::uint32_t w[] = {0x80, 16, 0x00010000, 0x00010100};
    t.insert(t.end(), std::begin(w), std::end(w));
    ++ops;
  }
  t[0] = (6u << 24) | (std::uint32_t(dev_gen) << 16) | (1u << 8) | 0u;
  t[1] = (1u << 8) | 5u;
  t[2] = ops;
  t[3] = std::uint32_t(t.size() * 4);
  return t;
}

std::vector<std::uint8_t> build_ctrl_elf(const ElfSpec& s) {
  if (elf_version(EV_CURRENT) == EV_NONE) throw std::runtime_error("libelf");
  char path[] = "/tmp/flopwatt-elf-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp");
  Elf* e = elf_begin(fd, ELF_C_WRITE, nullptr);
  Elf32_Ehdr* eh = elf32_newehdr(e);
  eh->e_ident[EI_DATA] = ELFDATA2LSB;
  eh->e_ident[EI_OSABI] = s.osabi;
  eh->e_type = ET_EXEC;
  eh->e_machine = EM_NONE;
  eh->e_version = EV_CURRENT;

  static const char shstr[] = "\0.ctrltext\0.ctrldata\0.dynsym\0.dynstr\0.rela.dyn\0.shstrtab\0.text";
  enum { N_CTRLTEXT = 1, N_CTRLDATA = 11, N_DYNSYM = 21, N_DYNSTR = 29, N_RELA = 37, N_SHSTRTAB = 47, N_TEXT = 57 };
  static const char dynstr[] = "\0arg_a\0arg_b";
  static std::uint32_t code[16];
  for (int i = 0; i < 16; ++i) code[i] = 0x1000u + i;
  static std::uint32_t cdata[4] = {1, 2, 3, 4};
  static Elf32_Sym syms[3];
  std::memset(syms, 0, sizeof syms);
  syms[1].st_name = 1, syms[1].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_OBJECT);
  syms[2].st_name = 7, syms[2].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_OBJECT);
  static Elf32_Rela rela[2];
  rela[0] = {8, ELF32_R_INFO(s.reloc_symbol, 1), 0};
  rela[1] = {16, ELF32_R_INFO(2, 1), 64};

  auto add = [&](std::uint32_t name, std::uint32_t type, void* buf, std::size_t size, Elf_Type dt, std::uint32_t entsize) {
    Elf_Scn* scn = elf_newscn(e);
    Elf_Data* d = elf_newdata(scn);
    d->d_buf = buf;
    d->d_size = size;
    d->d_type = dt;
    d->d_align = 4;
    d->d_version = EV_CURRENT;
    Elf32_Shdr* sh = elf32_getshdr(scn);
    sh->sh_name = name;
    sh->sh_type = type;
    sh->sh_entsize = entsize;
    return scn;
  };
  add(s.ctrltext ? N_CTRLTEXT : N_TEXT, SHT_PROGBITS, code, sizeof code, ELF_T_BYTE, 0);
  add(N_CTRLDATA, SHT_PROGBITS, cdata, sizeof cdata, ELF_T_BYTE, 0);
  Elf_Scn* dstr = add(N_DYNSTR, SHT_STRTAB, const_cast<char*>(dynstr), sizeof dynstr, ELF_T_BYTE, 0);
  Elf_Scn* dsym = add(N_DYNSYM, SHT_DYNSYM, syms, sizeof syms, ELF_T_SYM, sizeof(Elf32_Sym));
  elf32_getshdr(dsym)->sh_link = std::uint32_t(elf_ndxscn(dstr));
  elf32_getshdr(dsym)->sh_info = 1;
  if (s.relocations) {
    Elf_Scn* r = add(N_RELA, SHT_RELA, rela, sizeof rela, ELF_T_RELA, sizeof(Elf32_Rela));
    elf32_getshdr(r)->sh_link = std::uint32_t(elf_ndxscn(dsym));
  }
  Elf_Scn* str = add(N_SHSTRTAB, SHT_STRTAB, const_cast<char*>(shstr), sizeof shstr, ELF_T_BYTE, 0);
  eh->e_shstrndx = std::uint16_t(elf_ndxscn(str));
  if (elf_update(e, ELF_C_WRITE) < 0) throw std::runtime_error(std::string("elf_update: ") + elf_errmsg(-1));
  elf_end(e);
  ::close(fd);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return bytes;
}

}  // namespace flopwatt::npu::xdna::test
