// Human-readable output: one line per measurement as it completes, and a
// pivot summary (op x backend GFLOP/s, and FLOP/J where energy exists) at the end.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include "harness/output/run_model.h"

namespace flopwatt {

void print_row_header(std::FILE* f);
void print_row(std::FILE* f, const Run& run, const Measurement& m);
void print_summary(std::FILE* f, const Run& run, const std::string& out_dir);
std::string si(double v, const char* unit);  // 1.23 G<unit>

}  // namespace flopwatt
