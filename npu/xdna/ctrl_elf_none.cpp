// Built without libelf (FLOPWATT_WITH_NPU_DEVICE=OFF, or AUTO without libelf-dev):
// a design that ships a control-code ELF is refused with the fix.
#include "npu/xdna/ctrl_elf.h"

#include "workloads/error.h"

namespace flopwatt::npu::xdna {

CtrlElf parse_ctrl_elf(std::span<const std::uint8_t>, const std::string& where) {
  throw InputError(where, "flopwatt was built without libelf, so control-code ELF designs cannot be read",
                   "apt-get install libdrm-dev libelf-dev, then cmake -DFLOPWATT_WITH_NPU_DEVICE=ON and rebuild");
}

CtrlElf load_ctrl_elf(const std::string& path) { return parse_ctrl_elf({}, path); }

}  // namespace flopwatt::npu::xdna
