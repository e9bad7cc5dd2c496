#include "npu/xdna/device_info.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>

#include <fmt/format.h>

namespace flopwatt::npu::xdna {

namespace {

std::string why(int err) {
  if (err == EINVAL || err == EOPNOTSUPP || err == ENOTTY)
    return fmt::format("not supported by this driver ({})", std::strerror(err));
  return std::strerror(err);
}

template <class T>
Query<T> query_one(DriverApi& api, std::uint32_t param) {
  Query<T> q;
  T v{};
  GetInfo gi{param, std::uint32_t(sizeof(T)), reinterpret_cast<std::uint64_t>(&v)};
  int err = 0;
  if (api.ioctl(kIoctlGetInfo, &gi, &err) == 0) q.value = v;
  else q.error = why(err);
  return q;
}

template <class T>
Query<std::vector<T>> query_many(DriverApi& api, std::uint32_t param, std::size_t capacity) {
  Query<std::vector<T>> q;
  std::vector<T> v(capacity);
  GetInfo gi{param, std::uint32_t(capacity * sizeof(T)), reinterpret_cast<std::uint64_t>(v.data())};
  int err = 0;
  if (api.ioctl(kIoctlGetInfo, &gi, &err) == 0) {
    v.resize(std::min<std::size_t>(capacity, gi.buffer_size / sizeof(T)));
    q.value = std::move(v);
  } else {
    q.error = why(err);
  }
  return q;
}

// Every sensor the driver has. It writes as many as fit and sets buffer_size
// to what it wrote, never to what it has (amd/xdna-driver
// drivers/accel/amdxdna/amdxdna_sensors.c amdxdna_query_sensors, and
// src/driver/amdxdna/aie2_pci.c aie2_query_sensors): a full buffer may have
// cut the list, so ask again with twice the room. Today's drivers return at
// most a power, a temperature and 8 column sensors; the bound is far above.
Query<std::vector<Sensor>> query_sensors(DriverApi& api) {
  constexpr std::size_t kMaxSensors = 4096;
  Query<std::vector<Sensor>> q;
  for (std::size_t capacity = 16;; capacity *= 2) {
    q = query_many<Sensor>(api, kQuerySensors, capacity);
    if (!q.value || q.value->size() < capacity || capacity >= kMaxSensors) return q;
  }
}

std::string cstr(const char* p, std::size_t n) { return std::string(p, strnlen(p, n)); }

}  // namespace

DeviceInfo query_device(DriverApi& api) {
  DeviceInfo d;
  int err = 0;
  d.version = api.version(&err);
  d.aie = query_one<AieMetadata>(api, kQueryAieMetadata);
  d.clocks = query_one<ClockMetadata>(api, kQueryClockMetadata);
  d.firmware = query_one<FirmwareVersion>(api, kQueryFirmwareVersion);
  d.sensors = query_sensors(api);
  d.contexts = query_many<HwContextInfo>(api, kQueryHwContexts, 32);
  d.power_mode = query_one<PowerMode>(api, kGetPowerMode);
  d.resources = query_one<ResourceInfo>(api, kQueryResourceInfo);
  return d;
}

namespace {

std::string clocks_text(const Query<ClockMetadata>& c) {
  if (!c.value) return c.error;
  return fmt::format("{} {} MHz, {} {} MHz", cstr(c.value->mp_npu.name, 16), c.value->mp_npu.freq_mhz,
                     cstr(c.value->h_clock.name, 16), c.value->h_clock.freq_mhz);
}

std::string power_mode_text(const Query<PowerMode>& p) {
  if (!p.value) return p.error;
  const auto m = p.value->power_mode;
  return m < std::size(kPowerModeNames) ? kPowerModeNames[m] : fmt::format("unknown ({})", m);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> device_notes(const DeviceInfo& d) {
  std::vector<std::pair<std::string, std::string>> v;
  v.emplace_back("power_mode", power_mode_text(d.power_mode));
  v.emplace_back("clocks", clocks_text(d.clocks));
  v.emplace_back("firmware", d.firmware.value ? fmt::format("{}.{}.{}.{}", d.firmware.value->major, d.firmware.value->minor,
                                                            d.firmware.value->patch, d.firmware.value->build)
                                              : d.firmware.error);
  if (d.resources.value) v.emplace_back("context_limit", std::to_string(d.resources.value->npu_task_max));
  else v.emplace_back("context_limit", "not reported (" + d.resources.error + ")");
  return v;
}

std::uint32_t context_limit(const DeviceInfo& d, const std::string& generation) {
  if (d.resources.value && d.resources.value->npu_task_max > 0)
    return std::uint32_t(std::min<std::uint64_t>(d.resources.value->npu_task_max, 1024));
  return generation == "npu1" || generation.empty() ? 6 : 16;
}

std::string generation_from(const AieMetadata& m) { return m.cols >= 8 ? "npu4" : "npu1"; }

std::vector<std::string> describe(const DeviceInfo& d) {
  std::vector<std::string> v;
  if (d.version)
    v.push_back(fmt::format("driver      {} {}.{}.{} ({})", d.version->name, d.version->major, d.version->minor,
                            d.version->patch, d.version->desc));
  if (d.aie.value) {
    const auto& a = *d.aie.value;
    v.push_back(fmt::format("array       {} columns x {} rows, AIE version {}.{}, column size {} bytes", a.cols, a.rows,
                            a.version_major, a.version_minor, a.col_size));
    v.push_back(fmt::format("rows        core {}@{} ({} DMA ch), mem {}@{} ({} DMA ch), shim {}@{} ({} DMA ch)",
                            a.core.row_count, a.core.row_start, a.core.dma_channel_count, a.mem.row_count,
                            a.mem.row_start, a.mem.dma_channel_count, a.shim.row_count, a.shim.row_start,
                            a.shim.dma_channel_count));
  } else {
    v.push_back("array       AIE metadata: " + d.aie.error);
  }
  v.push_back("clocks      " + clocks_text(d.clocks));
  v.push_back("power mode  " + power_mode_text(d.power_mode));
  if (d.firmware.value)
    v.push_back(fmt::format("firmware    {}.{}.{}.{}", d.firmware.value->major, d.firmware.value->minor,
                            d.firmware.value->patch, d.firmware.value->build));
  else
    v.push_back("firmware    " + d.firmware.error);
  if (d.sensors.value && !d.sensors.value->empty()) {
    for (const auto& s : *d.sensors.value)
      v.push_back(fmt::format("sensor      {}: {} x 10^{} {} ({})", cstr(s.label, 64), s.input, int(s.unitm),
                              cstr(s.units, 16), cstr(s.status, 64)));
  } else {
    v.push_back("sensors     NPU power: " + (d.sensors.value ? std::string("none reported") : d.sensors.error));
  }
  if (d.contexts.value) v.push_back(fmt::format("contexts    {} hardware context(s) open", d.contexts.value->size()));
  else v.push_back("contexts    " + d.contexts.error);
  return v;
}

}  // namespace flopwatt::npu::xdna
