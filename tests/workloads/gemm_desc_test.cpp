#include <gtest/gtest.h>

#include "workloads/backend.h"

namespace flopwatt {
namespace {

TEST(GemmDesc, OperandBytesCountEachOperandOnceInItsOwnType) {
  GemmDesc d;
  d.M = 3;
  d.N = 5;
  d.K = 7;
  // fp32: A 3x7, B 7x5, C 3x5, four bytes each.
  EXPECT_DOUBLE_EQ(d.operand_bytes(), 4.0 * (21 + 35 + 15));
  d.dtype_in = DType::BF16;  // bf16 inputs, fp32 output
  EXPECT_DOUBLE_EQ(d.operand_bytes(), 2.0 * (21 + 35) + 4.0 * 15);
  d.beta = 1.0f;  // C is read as well as written
  EXPECT_DOUBLE_EQ(d.operand_bytes(), 2.0 * (21 + 35) + 8.0 * 15);
  d.trans_a = d.trans_b = true;  // a layout moves the same bytes
  EXPECT_DOUBLE_EQ(d.operand_bytes(), 2.0 * (21 + 35) + 8.0 * 15);
}

}  // namespace
}  // namespace flopwatt
