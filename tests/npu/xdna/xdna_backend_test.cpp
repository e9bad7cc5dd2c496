#include "npu/xdna/xdna_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "npu/xdna/fork_guard.h"
#include "npu/xdna/hw_context.h"
#include "tests/npu/npu_test_support.h"
#include "tests/npu/xdna/artifact_builders.h"
#include "tests/npu/xdna/fake_driver.h"
#include "tests/npu/xdna/fake_rig.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {
namespace {

using test::Rig;

const std::string kFixtures = std::string(FLOPWATT_TEST_FIXTURES) + "/npu";

TEST(XdnaBackend, UnavailableWithoutDeviceSaysWhy) {
  XdnaBackendConfig c;
  c.root = kFixtures + "/root-empty";
  c.artifacts_dir = "";
  XdnaBackend b(c);
  EXPECT_EQ(b.name(), "npu:xdna");
  EXPECT_FALSE(b.simulated());
  const Availability a = b.availability();
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("no amdxdna device"), std::string::npos) << a.reason;
  GemmDesc d;
  d.M = d.N = d.K = 16;
  EXPECT_FALSE(b.supports(d));
  std::vector<float> A(256), B(256), C(256);
  EXPECT_THROW(b.gemm(d, A.data(), B.data(), C.data()), InputError);
  EXPECT_FALSE(b.notes().empty());
}

// Random operands of d's shape; C is the float64 reference of alpha*op(A)op(B)+beta*C.
struct Operands {
  std::vector<float> A, B, C, ref;
  Operands(const GemmDesc& d, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    A.resize(std::size_t(d.M * d.K)), B.resize(std::size_t(d.K * d.N)), C.resize(std::size_t(d.M * d.N));
    for (auto& x : A) x = u(rng);
    for (auto& x : B) x = u(rng);
    for (auto& x : C) x = u(rng);
    ref.resize(C.size());
    for (std::int64_t i = 0; i < d.M; ++i)
      for (std::int64_t j = 0; j < d.N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < d.K; ++k)
          s += double(d.trans_a ? A[k * d.M + i] : A[i * d.K + k]) * (d.trans_b ? B[j * d.K + k] : B[k * d.N + j]);
        ref[i * d.N + j] = float(d.alpha * s + (d.beta != 0 ? d.beta * double(C[i * d.N + j]) : 0.0));
      }
  }
  // Relative Frobenius error; NaN never passes the callers' <= checks.
  double error() const {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < C.size(); ++i) num += (double(C[i]) - ref[i]) * (double(C[i]) - ref[i]), den += double(ref[i]) * ref[i];
    return std::sqrt(num / den);
  }
};

// bf16 inputs (8-bit mantissa) summed in fp32 over K <= 128: well within 1e-2.
constexpr double kBf16Tolerance = 1e-2;

GemmDesc shape(std::int64_t M, std::int64_t N, std::int64_t K) {
  GemmDesc d;
  d.M = M, d.N = N, d.K = K;
  return d;
}

void run_and_check(XdnaBackend& b, const GemmDesc& d, unsigned seed) {
  Operands o(d, seed);
  b.gemm(d, o.A.data(), o.B.data(), o.C.data());
  EXPECT_LE(o.error(), kBf16Tolerance) << d.M << "x" << d.N << "x" << d.K;
}

void full_host_flow(bool pasid) {
  Rig rig;
  rig.options.pasid = pasid;
  XdnaBackend b(rig.config());
  ASSERT_TRUE(b.availability().ok) << b.availability().reason;
  GemmDesc d = shape(200, 100, 60);  // padded into the 256x128x64 design
  d.trans_b = true, d.alpha = 2.0f, d.beta = 0.5f;
  EXPECT_TRUE(b.supports(d));
  run_and_check(b, d, 2);
  ASSERT_NE(rig.driver, nullptr);
  EXPECT_TRUE(rig.driver->heap_created);
  EXPECT_EQ(rig.driver->contexts_created, 1);
  EXPECT_EQ(rig.driver->configs, 1);
  EXPECT_EQ(rig.driver->execs, 1);
  EXPECT_EQ(rig.driver->last_state, test::upstream::kErtCmdStateCompleted);
  EXPECT_EQ(rig.driver->last_max_opc, 8192u);
  EXPECT_EQ(rig.driver->last_num_tiles, 4u * 4u);  // column width x core rows from AIE metadata
  // C comes back by a CPU cache flush in user space, as XRT does; the driver
  // refuses SYNC_BO FROM_DEVICE on an ordinary object.
  EXPECT_EQ(rig.driver->sync_from_device_refused, 0);
  const auto bd = b.last_breakdown();
  ASSERT_TRUE(bd);
  EXPECT_GT(bd->reconfigure, 0) << "first use loads the design";
  // Second call: design resident, no new context, no reconfiguration.
  run_and_check(b, d, 3);
  EXPECT_EQ(rig.driver->contexts_created, 1);
  EXPECT_EQ(rig.driver->execs, 2);
  EXPECT_EQ(b.last_breakdown()->reconfigure, 0);
  EXPECT_EQ(b.generation(), "npu1");
  // Too large for any design: unsupported, and gemm says which file to build.
  d.M = 1000;
  EXPECT_FALSE(b.supports(d));
  Operands o(shape(1000, 100, 60), 1);
  EXPECT_THROW(b.gemm(d, o.A.data(), o.B.data(), o.C.data()), InputError);
}

// Fails on the code before the amdxdna contract fixes: SHMEM objects report
// vaddr ~0 until mmapped, and their device address is ~0 in PASID mode.
TEST(XdnaBackend, FullHostFlowInPasidMode) { full_host_flow(true); }
// Fails there too: DEV objects have no user address of their own without PASID.
TEST(XdnaBackend, FullHostFlowWithoutPasid) { full_host_flow(false); }

TEST(XdnaBackend, Bf16OutputDesign) {
  Rig rig;
  rig.designs = {{256, 128, 64, DType::BF16}};
  XdnaBackend b(rig.config());
  GemmDesc d = shape(256, 128, 64);
  d.dtype_out = DType::BF16;
  std::vector<float> A(d.M * d.K, 0.5f), B(d.K * d.N, 0.25f);
  std::vector<bf16_t> C(d.M * d.N);
  b.gemm(d, A.data(), B.data(), C.data());
  EXPECT_EQ(bf16_to_f32(C[0]), 8.0f);  // 64 * 0.125
  EXPECT_EQ(bf16_to_f32(C.back()), 8.0f);
  GemmDesc f = d;
  f.dtype_out = DType::F32;
  EXPECT_FALSE(b.supports(f)) << "no fp32-output design in the manifest";
}

// Eight designs through a device that holds six contexts: the least recently
// used is destroyed before a new one is created, every result verified.
TEST(XdnaBackend, MoreDesignsThanTheContextLimit) {
  Rig rig;
  rig.designs.clear();
  for (int i = 0; i < 8; ++i) rig.designs.push_back({32 * (i + 1), 32, 16});
  XdnaBackend b(rig.config());
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 8; ++i) run_and_check(b, shape(32 * (i + 1), 32, 16), unsigned(10 * round + i));
  ASSERT_NE(rig.driver, nullptr);
  EXPECT_EQ(rig.driver->refused_contexts, 0) << "the limit the driver reports is respected";
  EXPECT_LE(rig.driver->max_live_contexts, 6);
  EXPECT_EQ(rig.driver->max_live_contexts, 6);
  EXPECT_EQ(rig.driver->contexts_created, 16) << "a cyclic pattern over 8 designs misses every time under LRU";
  EXPECT_EQ(rig.driver->contexts_destroyed, 10);
  EXPECT_EQ(rig.driver->design_runs.size(), 16u);
  // A resident design is reused: the most recent is still there.
  run_and_check(b, shape(256, 32, 16), 99);
  EXPECT_EQ(rig.driver->contexts_created, 16);
  EXPECT_EQ(b.last_breakdown()->reconfigure, 0);
  // Switching to an evicted design is reconfiguration, reported apart.
  run_and_check(b, shape(32, 32, 16), 98);
  EXPECT_GT(b.last_breakdown()->reconfigure, 0);
}

// Evictions, a hung command's abandoned context and the final teardown each
// close what they opened: buffer objects, contexts and the contexts' syncobj
// handles, which the driver leaves to user space. Both builds of the driver.
TEST(XdnaBackend, NothingIsLeftOpenOnceTheBackendIsGone) {
  for (const auto build : {test::DriverBuild::Mainline, test::DriverBuild::OutOfTree}) {
    Rig rig;
    rig.options.build = build;
    rig.designs.clear();
    for (int i = 0; i < 8; ++i) rig.designs.push_back({32 * (i + 1), 32, 16});
    {
      XdnaBackend b(rig.config());
      for (int i = 0; i < 8; ++i) run_and_check(b, shape(32 * (i + 1), 32, 16), unsigned(i));
      rig.driver->hang_next = 1;
      Operands o(shape(32, 32, 16), 1);
      EXPECT_THROW(b.gemm(shape(32, 32, 16), o.A.data(), o.B.data(), o.C.data()), std::runtime_error);
      run_and_check(b, shape(32, 32, 16), 2);
      EXPECT_EQ(rig.driver->live_syncobjs(), rig.driver->live_contexts()) << "one timeline per live context";
      if (build == test::DriverBuild::OutOfTree) {
        EXPECT_EQ(rig.driver->last_user_start_col, 0xFFu);
      }
    }
    ASSERT_TRUE(rig.ledger->closed);
    EXPECT_EQ(rig.ledger->bos, 0u);
    EXPECT_EQ(rig.ledger->contexts, 0u);
    EXPECT_EQ(rig.ledger->syncobjs, 0u);
  }
}

// CONFIG_CU points each compute unit at the PDI AIE_PARTITION lists for its
// kernel id, not every CU at the first CU's PDI.
TEST(XdnaBackend, EachComputeUnitGetsItsOwnPdi) {
  Rig rig;
  rig.designs = {{256, 128, 64, DType::F32, "npu1", "", true}};
  XdnaBackend b(rig.config());
  run_and_check(b, shape(256, 128, 64), 1);
  EXPECT_EQ(rig.driver->last_cu_designs, (std::vector<int>{0, 1})) << "fake designs 0 and 1 are the two PDIs";
  EXPECT_EQ(rig.driver->design_runs, (std::vector<std::size_t>{0})) << "the command goes to the first CU";
}

// A kernel whose metadata puts the data buffers 4 bytes further on than
// mlir-aie's usual layout: the command follows the metadata.
TEST(XdnaBackend, TheCommandFollowsTheKernelsRegisterMap) {
  Rig rig;
  rig.designs = {{256, 128, 64, DType::F32, "npu1", "", false, 0x18}};
  XdnaBackend b(rig.config());
  run_and_check(b, shape(256, 128, 64), 1);
  EXPECT_EQ(rig.driver->last_state, test::upstream::kErtCmdStateCompleted);
  EXPECT_EQ(rig.driver->design_runs.size(), 1u);
}

// Another process holding contexts: CREATE_HWCTX fails although the count is
// under the reported limit; the backend evicts its own and retries.
TEST(XdnaBackend, EvictsAndRetriesWhenTheFirmwareRefusesAContext) {
  Rig rig;
  rig.designs = {{32, 32, 16}, {64, 32, 16}, {96, 32, 16}};
  rig.options.hwctx_limit = 3;
  rig.options.held_elsewhere = 1;
  XdnaBackend b(rig.config());
  run_and_check(b, shape(32, 32, 16), 1);
  run_and_check(b, shape(64, 32, 16), 2);
  run_and_check(b, shape(96, 32, 16), 3);
  EXPECT_EQ(rig.driver->max_live_contexts, 2);
  EXPECT_EQ(rig.driver->refused_contexts, 1);
  EXPECT_EQ(rig.driver->contexts_destroyed, 1);
  run_and_check(b, shape(64, 32, 16), 4);  // still resident
  EXPECT_EQ(rig.driver->contexts_created, 3);
}

TEST(XdnaBackend, FailedCommandStatesAreReportedAndTheNextCallRecovers) {
  namespace up = test::upstream;
  const std::pair<std::uint32_t, const char*> states[] = {
      {up::kErtCmdStateError, "ERROR"}, {up::kErtCmdStateAbort, "ABORT"}, {up::kErtCmdStateTimeout, "TIMEOUT"}};
  for (const auto& [state, label] : states) {
    Rig rig;
    XdnaBackend b(rig.config());
    run_and_check(b, shape(256, 128, 64), 1);
    rig.driver->next_states.push_back(state);
    Operands o(shape(256, 128, 64), 2);
    try {
      b.gemm(shape(256, 128, 64), o.A.data(), o.B.data(), o.C.data());
      ADD_FAILURE() << label << " passed as success";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(label), std::string::npos) << e.what();
    }
    run_and_check(b, shape(256, 128, 64), 3);
  }
}

TEST(XdnaBackend, WaitTimeoutThrowsAndTheContextIsReplaced) {
  Rig rig;
  XdnaBackend b(rig.config());
  run_and_check(b, shape(256, 128, 64), 1);
  rig.driver->hang_next = 1;
  Operands o(shape(256, 128, 64), 2);
  try {
    b.gemm(shape(256, 128, 64), o.A.data(), o.B.data(), o.C.data());
    ADD_FAILURE() << "a command that never completed passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  run_and_check(b, shape(256, 128, 64), 3);
  EXPECT_EQ(rig.driver->contexts_created, 2) << "a context with a hung command is not reused";
  EXPECT_EQ(rig.driver->contexts_destroyed, 1);
}

TEST(XdnaBackend, SingleDesignModePadsEveryShapeIntoTheLargest) {
  Rig rig;
  rig.designs = {{32, 32, 16}, {128, 64, 32}, {64, 32, 16}};
  rig.mode = DesignMode::Single;
  XdnaBackend b(rig.config());
  run_and_check(b, shape(32, 32, 16), 1);
  run_and_check(b, shape(60, 20, 10), 2);
  run_and_check(b, shape(128, 64, 32), 3);
  EXPECT_EQ(rig.driver->contexts_created, 1);
  EXPECT_EQ(rig.driver->design_runs, (std::vector<std::size_t>{1, 1, 1}));
  EXPECT_FALSE(b.supports(shape(256, 32, 16)));
  bool mode_noted = false;
  for (const auto& [k, v] : b.notes()) mode_noted |= k == "design_mode" && v == "single";
  EXPECT_TRUE(mode_noted);
}

TEST(XdnaBackend, DesignModeFromTheEnvironment) {
  ::setenv("FLOPWATT_NPU_DESIGN", "single", 1);
  EXPECT_EQ(XdnaBackendConfig{}.design_mode, DesignMode::Single);
  ::setenv("FLOPWATT_NPU_DESIGN", "per-shape", 1);
  EXPECT_EQ(XdnaBackendConfig{}.design_mode, DesignMode::PerShape);
  ::setenv("FLOPWATT_NPU_DESIGN", "bogus", 1);
  Rig rig;
  XdnaBackend b(rig.config_from_env());
  ::unsetenv("FLOPWATT_NPU_DESIGN");
  EXPECT_FALSE(b.availability().ok);
  EXPECT_NE(b.availability().reason.find("FLOPWATT_NPU_DESIGN"), std::string::npos) << b.availability().reason;
}

// Designs built for another device are refused with the fix, not skipped.
TEST(XdnaBackend, DesignsForAnotherDeviceAreRefused) {
  Rig rig;
  rig.designs = {{256, 128, 64, DType::F32, "npu4"}};
  XdnaBackend b(rig.config());
  Operands o(shape(256, 128, 64), 1);
  try {
    b.gemm(shape(256, 128, 64), o.A.data(), o.B.data(), o.C.data());
    ADD_FAILURE() << "an npu4 design ran on npu1";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("npu4"), std::string::npos) << m;
    EXPECT_NE(m.find("--device npu1"), std::string::npos) << m;
  }
  EXPECT_EQ(rig.driver->execs, 0);
}

// A manifest entry whose M,N,K disagree with the design's own file name (mlir-aie's
// MxKxN) is refused before anything reaches the device; `run gemm` turns the
// unavailable, explicitly named backend into exit 2.
TEST(XdnaBackend, AManifestWhoseShapeDiffersFromItsDesignIsRefused) {
  Rig rig;
  rig.designs = {{256, 64, 128, DType::F32, "npu1", "256x64x128"}};  // built as M=256 K=64 N=128
  XdnaBackend b(rig.config());
  EXPECT_FALSE(b.availability().ok);
  EXPECT_NE(b.availability().reason.find("MxKxN"), std::string::npos) << b.availability().reason;
  Operands o(shape(256, 64, 128), 1);
  EXPECT_THROW(b.gemm(shape(256, 64, 128), o.A.data(), o.B.data(), o.C.data()), InputError);
  rig.designs = {{256, 128, 64, DType::F32, "npu1", "256x64x128"}};  // the same design, described right
  XdnaBackend ok(rig.config());
  EXPECT_TRUE(ok.availability().ok) << ok.availability().reason;
  run_and_check(ok, shape(256, 128, 64), 2);
}

TEST(XdnaBackend, DriverReportInTheNotes) {
  Rig rig;
  rig.options.power_mode = 3;
  XdnaBackend b(rig.config());
  std::map<std::string, std::string> n;
  for (const auto& [k, v] : b.notes()) n[k] = v;
  EXPECT_EQ(n["power_mode"], "high");
  EXPECT_EQ(n["clocks"], "MP-NPU Clock 1267 MHz, H Clock 1600 MHz");
  EXPECT_EQ(n["context_limit"], "6");
  EXPECT_EQ(n["firmware"], "1.5.2.380");
}

// Mainline's flush, from a child closing the shared file, tears down every
// context of it: the backend gives its contexts back before flopwatt forks
// and re-creates them on the next GEMM, so nothing it holds is lost.
TEST(XdnaBackend, ContextsAreGivenBackBeforeAForkAndTheNextGemmRuns) {
  for (const auto build : {test::DriverBuild::Mainline, test::DriverBuild::OutOfTree}) {
    SCOPED_TRACE(build == test::DriverBuild::Mainline ? "mainline" : "out-of-tree");
    Rig rig;
    rig.options.build = build;
    XdnaBackend b(rig.config());
    run_and_check(b, shape(256, 128, 64), 1);
    ASSERT_EQ(open_contexts(), 1u);
    release_contexts_before_fork();
    EXPECT_EQ(open_contexts(), 0u);
    EXPECT_EQ(rig.driver->live_contexts(), 0u) << "destroyed, not just forgotten";
    rig.driver->flush_from_child();
    EXPECT_EQ(rig.driver->contexts_flushed, 0);
    run_and_check(b, shape(256, 128, 64), 2);
    EXPECT_EQ(rig.driver->contexts_created, 2);
    EXPECT_EQ(rig.driver->last_state, test::upstream::kErtCmdStateCompleted);
  }
  EXPECT_EQ(open_contexts(), 0u);
}

// The model itself: on mainline a child's flush takes a held context with it,
// and a command on it fails; that is what the release prevents.
TEST(XdnaBackend, MainlinesFlushFromAChildTearsDownHeldContexts) {
  Rig rig;
  XdnaBackend b(rig.config());
  run_and_check(b, shape(256, 128, 64), 1);
  rig.driver->flush_from_child();
  EXPECT_EQ(rig.driver->contexts_flushed, 1);
  Operands o(shape(256, 128, 64), 3);
  EXPECT_THROW(b.gemm(shape(256, 128, 64), o.A.data(), o.B.data(), o.C.data()), std::runtime_error);
}

// A context nobody registered to give back stops the fork.
TEST(XdnaBackend, AForkWithAContextStillOpenIsRefused) {
  test::FakeDriver f({}, test::FakeOptions{});
  DevHeap heap(f);  // the driver wants a heap before a context
  {
    HwContext ctx(f, 8192, 16, DriverBuild::Mainline);
    EXPECT_THROW(release_contexts_before_fork(), std::logic_error);
  }
  EXPECT_NO_THROW(release_contexts_before_fork());
}

}  // namespace
}  // namespace flopwatt::npu::xdna
