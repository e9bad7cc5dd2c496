// One run's output directory: run.json and measurements.csv are rewritten
// whole and replaced atomically after every measurement (by the json and csv
// writers), samples.csv is appended, so an interrupted run always leaves
// valid files.
#pragma once
#include <atomic>
#include <memory>
#include <sstream>
#include <string>

#include "harness/output/run_model.h"
#include "harness/output/safe_file.h"
#include "harness/output/writer.h"
#include "harness/run/roofline.h"
#include "harness/run/timing.h"
#include "power/sampler.h"

namespace flopwatt {

class Session {
 public:
  // Creates out_dir (parents too); throws InputError naming --out when it
  // cannot, or when it already holds a run and `overwrite` is false (with
  // overwrite, that run's files and plots are removed first).
  Session(Run header, std::string out_dir, bool overwrite = false);
  ~Session();

  Run& run() { return run_; }
  const std::string& out_dir() const { return out_dir_; }
  // The ceilings every later measurement is placed against (intensity,
  // fraction_of_roof), and finish() fits the energy roofline with.
  void set_roofline(RooflineSet roofs) { roofs_ = std::move(roofs); }
  const RooflineSet& roofline() const { return roofs_; }
  void add(Measurement m);                                  // places on the roofline, appends and persists
  void add_samples(const std::vector<power::SourceSamples>& s);
  void save();                                              // rewrite run.json now
  void finish(bool complete);                               // final write

 private:
  Run run_;
  std::string out_dir_;
  OutputDir dir_;
  int samples_ = -1;
  RooflineSet roofs_;
  std::vector<std::unique_ptr<Writer>> writers_;  // run.json and measurements.csv
};

// Sets g_interrupted (harness/run/timing.h) on SIGINT/SIGTERM.
void install_interrupt_handler();

// "20261122-001530-ab12" style id; default out dir is default_run_dir(<run-id>) (harness/output/data_home.h).
std::string make_run_id();

}  // namespace flopwatt
