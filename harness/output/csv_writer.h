// measurements.csv: one row per measurement, flattened. Energy columns are
// `energy/<source>/<field>` for the union of sources seen so far, so the file is
// rewritten whole rather than fixing its columns from the first row.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/output/run_model.h"

namespace flopwatt {

std::vector<std::string> csv_columns(const Run& run);
void write_measurements_csv(const Run& run, std::ostream& os);

}  // namespace flopwatt
