// RAPL read straight from the model-specific registers through /dev/cpu/N/msr
// (pread at offset = MSR number): Intel and AMD layouts, 32-bit counters that
// wrap, energy unit from the unit register.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "power/source.h"

namespace flopwatt::power {

namespace msr {
constexpr std::uint32_t kIntelUnit = 0x606;
constexpr std::uint32_t kIntelPackage = 0x611;
constexpr std::uint32_t kIntelPP0 = 0x639;  // cores
constexpr std::uint32_t kIntelPP1 = 0x641;  // uncore / graphics
constexpr std::uint32_t kIntelDram = 0x619;
constexpr std::uint32_t kIntelPlatform = 0x64D;  // psys
constexpr std::uint32_t kAmdUnit = 0xC0010299;
constexpr std::uint32_t kAmdCore = 0xC001029A;  // one per physical core
constexpr std::uint32_t kAmdPackage = 0xC001029B;
}  // namespace msr

struct CpuId {
  std::string vendor;  // GenuineIntel, AuthenticAMD, HygonGenuine
  int family = -1;
  int model = -1;
  std::string model_name;
};
// First processor's identity from <root>/proc/cpuinfo.
CpuId read_cpu_id(const std::string& root);

// Joules per count from a RAPL unit register (energy status unit, bits 12:8).
double rapl_energy_unit_j(std::uint64_t unit_register);
// Intel server parts whose DRAM domain counts in fixed 15.3 uJ units regardless of the unit register.
bool intel_dram_fixed_unit(int family, int model);
// Joules per count of one Intel RAPL domain ("package", "core", "uncore",
// "dram", "psys") on one model, as the kernel converts it: the unit register
// except where drivers/powercap/intel_rapl_common.c and
// arch/x86/events/rapl.c fix it per model (server DRAM 2^-16 J, Sapphire and
// Emerald Rapids psys 1 J, Silvermont/Airmont Atoms 2^ESU uJ).
double intel_domain_unit_j(int family, int model, const std::string& domain, std::uint64_t unit_register);

// The device beneath: /dev/cpu/N/msr read with pread at offset = register.
// Swappable because a regular file cannot hold adjacent registers (AMD's
// unit, core and package MSRs are one apart and would overlap).
class MsrAccess {
 public:
  virtual ~MsrAccess() = default;
  virtual int open(int cpu) = 0;  // a handle, or -errno
  virtual bool read(int handle, std::uint32_t reg, std::uint64_t& value, int& err) = 0;
  virtual void close(int handle) = 0;
};
std::shared_ptr<MsrAccess> file_msr_access(const std::string& root);

void probe_msr_rapl(const std::string& root, Discovery& d, std::shared_ptr<MsrAccess> access = nullptr);

}  // namespace flopwatt::power
