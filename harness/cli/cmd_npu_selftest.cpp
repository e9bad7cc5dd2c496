// `flopwatt npu selftest`: the real NPU path once, each stage timed, checked
// against cpu:reference (the work is in npu/xdna/selftest.cpp).
#include <memory>
#include <string>

#include <fmt/core.h>

#include "cpu/backends.h"
#include "harness/cli/commands.h"
#include "npu/xdna/selftest.h"
#include "workloads/error.h"

namespace flopwatt {

void register_npu_selftest(CLI::App& npu_cmd, CliState& st) {
  struct Opts {
    std::string root, artifacts;
    double timeout_s = 10;
  };
  auto o = std::make_shared<Opts>();
  auto* c = npu_cmd.add_subcommand(
      "selftest", "Run one small design on the NPU, time every stage and check it against cpu:reference");
  c->add_option("--sysfs-root", o->root, "Filesystem root for /dev and /sys (default / or $FLOPWATT_SYSFS_ROOT)")
      ->check(CLI::ExistingDirectory);
  c->add_option("--artifacts", o->artifacts, "Design directory with manifest.json (default $FLOPWATT_NPU_ARTIFACTS)");
  c->add_option("--timeout", o->timeout_s, "Seconds to wait for the command (default 10)");
  c->callback([o, &st] {
    if (!(o->timeout_s > 0 && o->timeout_s <= 3600))
      throw InputError("--timeout", "must be a number of seconds from 0 to 3600", "e.g. --timeout 10");
    npu::xdna::XdnaBackendConfig cfg;
    if (!o->root.empty()) cfg.root = o->root;
    if (!o->artifacts.empty()) cfg.artifacts_dir = o->artifacts;
    cfg.timeout_ns = std::int64_t(o->timeout_s * 1e9);
    std::unique_ptr<Backend> ref;
    for (auto& b : cpu::make_backends())
      if (b->name() == "cpu:reference") ref = std::move(b);
    const auto r = npu::xdna::run_selftest(cfg, [&](const GemmDesc& d, const void* A, const void* B, void* C) {
      ref->gemm(d, A, B, C);
    });
    fmt::print("npu selftest\n");
    for (const auto& s : r.stages)
      fmt::print("  {:<9} {:>10.3f} ms  {:<4} {}\n", s.name, s.seconds * 1e3, s.ok ? "ok" : "FAIL", s.detail);
    std::fflush(stdout);
    if (!r.missing.empty()) throw InputError("npu selftest", r.missing, r.fix);
    fmt::print("{}\n", r.passed ? "selftest passed" : "selftest FAILED: attach this output to a bug report");
    st.exit_code = r.passed ? 0 : 1;
  });
}

}  // namespace flopwatt
