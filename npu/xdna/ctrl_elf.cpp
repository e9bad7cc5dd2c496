#include "npu/xdna/ctrl_elf.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace {

constexpr std::uint8_t kAie2p = 69, kAie2ps = 64, kAie2psGroup = 70;

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

}  // namespace

CtrlElf parse_ctrl_elf(std::span<const std::uint8_t> bytes, const std::string& where) {
  const std::string fix = "regenerate the control-code ELF with aiecc or the XRT toolchain";
  auto fail = [&](const std::string& what) { throw InputError(where, what, fix); };
  if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) fail("not an ELF file (bad magic)");
  if (elf_version(EV_CURRENT) == EV_NONE) fail(std::string("libelf unusable: ") + elf_errmsg(-1));
  // libelf reads from a private copy: it must not see the caller's buffer change.
  std::vector<char> image(bytes.begin(), bytes.end());
  std::unique_ptr<Elf, ElfCloser> elf(elf_memory(image.data(), image.size()));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) fail(std::string("libelf rejects it: ") + elf_errmsg(-1));
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf.get(), &eh)) fail(std::string("unreadable ELF header: ") + elf_errmsg(-1));
  CtrlElf out;
  out.elf_class = eh.e_ident[EI_CLASS] == ELFCLASS64 ? 64 : 32;
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) fail("not little-endian");
  out.osabi = eh.e_ident[EI_OSABI];
  if (out.osabi == kAie2p) out.platform = "aie2p";
  else if (out.osabi == kAie2ps) out.platform = "aie2ps";
  else if (out.osabi == kAie2psGroup) out.platform = "aie2ps-group";
  else fail(fmt::format("OS ABI {} is not an AIE platform (69 aie2p, 64 aie2ps, 70 aie2ps group)", out.osabi));

  std::size_t shnum = 0, shstrndx = 0;
  if (elf_getshdrnum(elf.get(), &shnum) != 0 || elf_getshdrstrndx(elf.get(), &shstrndx) != 0)
    fail(std::string("unreadable section table: ") + elf_errmsg(-1));
  if (eh.e_shoff > bytes.size() || std::uint64_t(shnum) * eh.e_shentsize > bytes.size() - eh.e_shoff)
    fail("section header table runs past the end of the file");

  std::vector<std::pair<Elf_Scn*, GElf_Shdr>> relas;
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) fail(std::string("unreadable section header: ") + elf_errmsg(-1));
    const char* nm = elf_strptr(elf.get(), shstrndx, sh.sh_name);
    if (!nm) fail(fmt::format("section {} has no name in the string table", elf_ndxscn(scn)));
    CtrlElfSection s{nm, sh.sh_type, sh.sh_offset, sh.sh_size};
    if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > bytes.size() || sh.sh_size > bytes.size() - sh.sh_offset))
      fail(fmt::format("section '{}' ({} bytes at {}) runs past the end of the {}-byte file", s.name, s.size, s.offset,
                       bytes.size()));
    if (starts_with(s.name, ".ctrltext")) out.ctrltext_bytes += s.size;
    if (starts_with(s.name, ".ctrldata")) out.ctrldata_bytes += s.size;
    if (starts_with(s.name, ".ctrlpkt")) out.ctrlpkt_bytes += s.size;
    if (sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) relas.emplace_back(scn, sh);
    out.sections.push_back(std::move(s));
  }
  if (out.ctrltext_bytes == 0) fail("no .ctrltext section (the control code)");

  for (auto& [scn, sh] : relas) {
    Elf_Scn* symscn = elf_getscn(elf.get(), sh.sh_link);
    GElf_Shdr symsh;
    if (!symscn || !gelf_getshdr(symscn, &symsh) || (symsh.sh_type != SHT_DYNSYM && symsh.sh_type != SHT_SYMTAB))
      fail(fmt::format("relocation section {} links to section {}, which is not a symbol table", elf_ndxscn(scn), sh.sh_link));
    Elf_Data* syms = elf_getdata(symscn, nullptr);
    Elf_Data* rel = elf_getdata(scn, nullptr);
    if (!syms || !rel) fail(std::string("unreadable relocation data: ") + elf_errmsg(-1));
    const std::size_t nsyms = symsh.sh_entsize ? symsh.sh_size / symsh.sh_entsize : 0;
    const std::size_t nrel = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    for (std::size_t i = 0; i < nrel; ++i) {
      std::size_t symidx = 0;
      if (sh.sh_type == SHT_RELA) {
        GElf_Rela r;
        if (!gelf_getrela(rel, int(i), &r)) fail(fmt::format("relocation {} unreadable", i));
        symidx = GELF_R_SYM(r.r_info);
      } else {
        GElf_Rel r;
        if (!gelf_getrel(rel, int(i), &r)) fail(fmt::format("relocation {} unreadable", i));
        symidx = GELF_R_SYM(r.r_info);
      }
      if (symidx >= nsyms) fail(fmt::format("relocation {} names symbol {} of {}", i, symidx, nsyms));
      GElf_Sym sym;
      if (!gelf_getsym(syms, int(symidx), &sym)) fail(fmt::format("symbol {} unreadable", symidx));
      const char* sn = elf_strptr(elf.get(), symsh.sh_link, sym.st_name);
      if (!sn) fail(fmt::format("symbol {} has no name", symidx));
      if (std::find(out.patched_symbols.begin(), out.patched_symbols.end(), sn) == out.patched_symbols.end())
        out.patched_symbols.emplace_back(sn);
      ++out.relocations;
    }
  }
  return out;
}

CtrlElf load_ctrl_elf(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  return parse_ctrl_elf(bytes, path);
}

}  // namespace flopwatt::npu::xdna
