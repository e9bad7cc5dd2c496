#include "workloads/gpt2/profiler.h"

#include <gtest/gtest.h>

#include <vector>

namespace flopwatt::gpt2 {
namespace {

TEST(Profiler, HooksRunOncePerOutermostOpAndSeeItsOpAndLayer) {
  Profiler p;
  std::vector<std::pair<int, int>> ended;
  int begun = 0;
  std::int64_t begun_at = 0;
  p.on_op_begin = [&] {
    ++begun;
    begun_at = Profiler::now_ns();
  };
  p.on_op_end = [&](Op op, int layer) { ended.emplace_back(int(op), layer); };
  {
    OpScope outer(&p, Op::QkvFwd, 3);
    OpScope inner(&p, Op::AttnFwd, 3);  // nested: recorded, but no second hook call
  }
  { OpScope next(&p, Op::Data, -1); }
  EXPECT_EQ(begun, 2);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0], std::make_pair(int(Op::QkvFwd), 3));
  EXPECT_EQ(ended[1], std::make_pair(int(Op::Data), -1));
  ASSERT_EQ(p.records().size(), 3u);
  // The hook ran before the op's interval began.
  EXPECT_LE(begun_at, p.records().back().t0_ns);
  EXPECT_EQ(p.depth, 0);
}

TEST(Profiler, NoHooksNoCalls) {
  Profiler p;
  { OpScope s(&p, Op::Data, -1); }
  EXPECT_EQ(p.records().size(), 1u);
  { OpScope s(nullptr, Op::Data, -1); }  // a null profiler records nothing
  EXPECT_EQ(p.records().size(), 1u);
}

}  // namespace
}  // namespace flopwatt::gpt2
