// The host's copy rate into device buffers, measured once per process: the
// time to convert a buffer of fp32 to bf16 (the copy-in the NPU path does),
// counted as bytes read plus bytes written per second, best of a few runs
// with all OpenMP threads.
#pragma once

namespace flopwatt::npu {

// Cached after the first call (about 50 ms); never throws, 0 when it failed.
double measured_host_copy_bytes_per_s();

}  // namespace flopwatt::npu
