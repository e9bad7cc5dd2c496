#include "npu/xdna/device_info.h"

#include <cerrno>
#include <cmath>
#include <cstring>

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

std::string cstr(const char* p, std::size_t n) { return std::string(p, strnlen(p, n)); }

}  // namespace

DeviceInfo query_device(DriverApi& api) {
  DeviceInfo d;
  int err = 0;
  d.version = api.version(&err);
  d.aie = query_one<AieMetadata>(api, kQueryAieMetadata);
  d.clocks = query_one<ClockMetadata>(api, kQueryClockMetadata);
  d.firmware = query_one<FirmwareVersion>(api, kQueryFirmwareVersion);
  d.sensors = query_many<Sensor>(api, kQuerySensors, 8);
  d.contexts = query_many<HwContextInfo>(api, kQueryHwContexts, 32);
  return d;
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
  if (d.clocks.value)
    v.push_back(fmt::format("clocks      {} {} MHz, {} {} MHz", cstr(d.clocks.value->mp_npu.name, 16),
                            d.clocks.value->mp_npu.freq_mhz, cstr(d.clocks.value->h_clock.name, 16),
                            d.clocks.value->h_clock.freq_mhz));
  else
    v.push_back("clocks      " + d.clocks.error);
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
