// No process holding an NPU hardware context starts another. Mainline's
// amdxdna_flush tears down every hardware context of the file on any flush,
// and a child flushes the file it shares with its parent when it closes it:
// at exec (the device is opened O_CLOEXEC, driver_api.cpp) or at exit
// (xdna-driver's out-of-tree driver skips flushes from other PIDs; mainline,
// Linux drivers/accel/amdxdna/amdxdna_pci_drv.c as first merged, does not).
// So whoever holds contexts registers a releaser, and every place flopwatt
// forks calls release_contexts_before_fork() first: the releasers give their
// contexts back (a backend re-creates them on its next GEMM), and a context
// still open after them is an error, never a fork.
#pragma once
#include <cstddef>
#include <functional>

namespace flopwatt::npu::xdna {

class ForkReleaser {
 public:
  explicit ForkReleaser(std::function<void()> release);
  ~ForkReleaser();
  ForkReleaser(const ForkReleaser&) = delete;
  ForkReleaser& operator=(const ForkReleaser&) = delete;

 private:
  friend void release_contexts_before_fork();
  std::function<void()> release_;
};

// Runs every releaser, then throws std::logic_error when a hardware context
// of this process is still open.
void release_contexts_before_fork();

// Hardware contexts this process holds (HwContext counts itself).
std::size_t open_contexts();
void count_context(int delta);

}  // namespace flopwatt::npu::xdna
