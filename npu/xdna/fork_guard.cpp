#include "npu/xdna/fork_guard.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace flopwatt::npu::xdna {

namespace {

std::atomic<long> g_contexts{0};

struct Registry {
  std::mutex m;
  std::vector<ForkReleaser*> releasers;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

ForkReleaser::ForkReleaser(std::function<void()> release) : release_(std::move(release)) {
  std::lock_guard<std::mutex> l(registry().m);
  registry().releasers.push_back(this);
}

ForkReleaser::~ForkReleaser() {
  std::lock_guard<std::mutex> l(registry().m);
  auto& v = registry().releasers;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void release_contexts_before_fork() {
  {
    std::lock_guard<std::mutex> l(registry().m);
    for (ForkReleaser* r : registry().releasers) r->release_();
  }
  if (const std::size_t n = open_contexts())
    throw std::logic_error("this process still holds " + std::to_string(n) +
                           " NPU hardware context(s) and is about to start another process, whose closing of the "
                           "device file would tear them down (mainline amdxdna_flush)");
}

std::size_t open_contexts() { return std::size_t(std::max(0L, g_contexts.load())); }

void count_context(int delta) { g_contexts += delta; }

}  // namespace flopwatt::npu::xdna
