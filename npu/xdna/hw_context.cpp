#include "npu/xdna/hw_context.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "npu/xdna/fork_guard.h"

namespace flopwatt::npu::xdna {

std::vector<std::uint8_t> cu_config_param(const std::vector<CuConfig>& cus) {
  CuConfigHeader h{};
  h.num_cus = std::uint16_t(cus.size());
  std::vector<std::uint8_t> buf(sizeof(h) + cus.size() * sizeof(CuConfig));
  std::memcpy(buf.data(), &h, sizeof(h));
  if (!cus.empty()) std::memcpy(buf.data() + sizeof(h), cus.data(), cus.size() * sizeof(CuConfig));
  return buf;
}

DriverBuild driver_build(const std::optional<DrmVersionInfo>& version) {
  return version && version->major >= kOutOfTreeDriverMajor ? DriverBuild::OutOfTree : DriverBuild::Mainline;
}

QosInfoOutOfTree qos_for(DriverBuild build) {
  QosInfoOutOfTree q{};
  // The out-of-tree driver takes any other value as a requested start column;
  // mainline never reads this word.
  if (build == DriverBuild::OutOfTree) q.user_start_col = kUserStartColNotRequested;
  return q;
}

CuPdis load_cu_pdis(DriverApi& api, DevHeap& heap, const Xclbin& x) {
  const std::vector<const AiePdi*> pdi_of = cu_pdis(x);
  CuPdis r;
  std::vector<const AiePdi*> loaded;
  for (std::size_t i = 0; i < pdi_of.size(); ++i) {
    auto at = std::find(loaded.begin(), loaded.end(), pdi_of[i]);
    if (at == loaded.end()) {
      const auto& image = pdi_of[i]->image;
      auto bo = std::make_unique<Bo>(api, kBoDev, image.size(), &heap);
      std::memcpy(bo->data(), image.data(), image.size());
      bo->sync(kSyncToDevice);
      r.bos.push_back(std::move(bo));
      at = loaded.insert(loaded.end(), pdi_of[i]);
    }
    CuConfig c{};
    c.cu_bo = r.bos[std::size_t(at - loaded.begin())]->handle();
    c.cu_func = x.cus[i].functional;
    r.cus.push_back(c);
  }
  return r;
}

HwContext::HwContext(DriverApi& api, std::uint32_t max_opc, std::uint32_t num_tiles, DriverBuild build) : api_(api) {
  const QosInfoOutOfTree qos = qos_for(build);
  CreateHwctx c{};
  c.qos_p = reinterpret_cast<std::uint64_t>(&qos);
  c.max_opc = max_opc;
  c.num_tiles = num_tiles;
  int err = 0;
  if (api_.ioctl(kIoctlCreateHwctx, &c, &err) != 0)
    throw std::runtime_error(fmt::format("amdxdna CREATE_HWCTX ({} ops/cycle, {} tiles) failed: {}", max_opc, num_tiles,
                                         std::strerror(err)));
  handle_ = c.handle;
  syncobj_ = c.syncobj_handle;
  count_context(+1);
}

HwContext::~HwContext() {
  count_context(-1);
  DestroyHwctx d{handle_, 0};
  int err = 0;
  api_.ioctl(kIoctlDestroyHwctx, &d, &err);
  api_.syncobj_destroy(syncobj_);
}

void HwContext::configure_cus(const std::vector<CuConfig>& cus) {
  auto param = cu_config_param(cus);
  if (param.size() > 4096) throw std::runtime_error("CU configuration exceeds the driver's 4 KiB limit");
  ConfigHwctx c{};
  c.handle = handle_;
  c.param_type = kConfigCu;
  c.param_val = reinterpret_cast<std::uint64_t>(param.data());
  c.param_val_size = std::uint32_t(param.size());
  int err = 0;
  if (api_.ioctl(kIoctlConfigHwctx, &c, &err) != 0)
    throw std::runtime_error(fmt::format("amdxdna CONFIG_HWCTX (CONFIG_CU, {} CUs) failed: {}", cus.size(), std::strerror(err)));
}

}  // namespace flopwatt::npu::xdna
