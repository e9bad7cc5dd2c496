// One interface for everything that turns a Run into output: run.json,
// measurements.csv and the console. A writer is told when the run's header is
// known (context), after each measurement is appended (measurement) and when
// the run ends (finalize); each call sees the whole Run, so a file writer can
// rewrite its file and an interruption at any point leaves a valid one.
#pragma once
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/output/run_model.h"

namespace flopwatt {

class Writer {
 public:
  virtual ~Writer() = default;
  virtual void context(const Run& run) = 0;
  virtual void measurement(const Run& run, const Measurement& m) = 0;
  virtual void finalize(const Run& run) = 0;
};

// Where a writer's text goes. File writers hand their whole file to
// replace_file (which owns the file system: atomic replacement, modes);
// the console writer prints to stream.
struct WriterTarget {
  std::function<void(const std::string& file_name, const std::string& text)> replace_file;
  std::FILE* stream = stdout;
  std::string out_dir;  // named in the console summary
};

// "json" (run.json), "csv" (measurements.csv), "console" (a row per
// measurement, the summary at the end). Throws std::invalid_argument for
// another name.
std::unique_ptr<Writer> make_writer(const std::string& name, const WriterTarget& target);
std::vector<std::string> writer_names();

}  // namespace flopwatt
