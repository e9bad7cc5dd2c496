// The results store: every run recorded in one database (SQLite by default, or
// PostgreSQL for a fleet) with the same schema on both engines. It reads the
// run model (harness/output/run_model.h) and nothing else of the harness.
#pragma once
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "harness/output/run_model.h"
#include "harness/store/conninfo.h"
#include "harness/store/db.h"
#include "workloads/error.h"

namespace flopwatt::store {

inline constexpr int kSchemaVersion = 4;
// PRAGMA application_id of a flopwatt SQLite store ("FWst"): tells it from any other SQLite file.
inline constexpr int kApplicationId = 0x46577374;

struct MachineRow;  // store.cpp: what Store::record writes of a run's machine

// Where a store lives, and how it was chosen (for messages).
struct Target {
  std::string spec;  // a file path, or a PostgreSQL URI / libpq connection string
  std::string from;  // "--store", "FLOPWATT_STORE" or "default"
  bool postgres = false;
};

// --store when given, else $FLOPWATT_STORE, else $XDG_DATA_HOME/flopwatt/results.sqlite3
// (~/.local/share/... when XDG_DATA_HOME is unset or not absolute). Throws
// InputError for a spec that is neither a PostgreSQL one libpq accepts nor a
// file path (another URL scheme, a connection string libpq refuses).
Target resolve(const std::string& flag_value, const std::string& flag_name = "--store");
// $XDG_DATA_HOME/flopwatt/results.sqlite3, the local store whatever FLOPWATT_STORE says.
std::string resolve_default_file();
// Invalid UTF-8 bytes become "\xNN" (and a backslash before "x" stays
// readable), so a tag or label reaches run.json, SQLite and PostgreSQL alike.
std::string clean_text(const std::string& s);

struct RunSummary {
  std::string run_id, machine_id, machine_label, started_utc, command, git_revision, headline_source;
  bool complete = false;
  int measurements = 0;
  std::vector<std::string> tags;
};

struct ListFilter {
  std::string machine;  // machine id or label
  std::string since;    // ISO date or time, compared with started_utc
  std::string tag;
};

// A history's points share their run's and their series' text: 90,000 points
// of 1,000 runs spent most of `history`'s time copying and comparing it.
struct HistoryRun {
  std::string run_id, started_utc, git_revision, machine;
};
struct HistorySeries {
  std::string config_key, label, backend, machine;
};
// One point of a history series: a metric of one configuration in one run.
struct HistoryPoint {
  const HistoryRun* run = nullptr;
  const HistorySeries* series = nullptr;
  double value = 0;
};
struct History {
  std::deque<HistoryRun> runs;  // deques: the points point into them
  std::deque<HistorySeries> series;
  std::vector<HistoryPoint> points;
};

// One row of samples.csv as the store keeps it: numbers as their text, so a
// run's samples go from one store to another unchanged.
struct SampleRow {
  std::string source_id, t_ns;
  Value value, unit;
};

// samples.csv (source_id,t_ns,value,unit; a source id quoted when it holds a
// comma) as rows; lines without all four fields are left out.
std::vector<SampleRow> parse_samples_csv(const std::string& csv);

struct HistoryFilter {
  std::string metric;  // flop_per_s | flop_per_j | median_s | energy_j
  std::string backend, op, machine;
};

class Store {
 public:
  // Opens the store, creating or migrating its schema when `create` (a
  // missing SQLite file is then created). Throws InputError naming the store
  // when it is not a flopwatt store, is damaged, or has a newer schema.
  // `stop` set (a signal) ends a wait for a PostgreSQL server within 100 ms.
  // A password given in --store or a URL argument draws one warning on stderr.
  static std::unique_ptr<Store> open(const Target& t, bool create = true, const std::atomic<bool>* stop = nullptr);

  int schema_version() const { return version_; }
  const Target& target() const { return target_; }
  // Records one run in one transaction; returns false when the run id is
  // already there (nothing is changed then). Samples are added when given, in
  // the same transaction. Inside a batch the run is a savepoint of the
  // batch's transaction instead, and is stored when the batch commits.
  // `packed`, when given, is the run's run.json as read (the run parsed
  // from it) packed by pack_run_doc (run_doc.h), kept instead of writing the
  // run out again; an import packs on several threads.
  bool record(const Run& run, const std::vector<std::string>& tags, const std::vector<SampleRow>& samples = {},
              const std::string* packed = nullptr);
  bool has_run(const std::string& run_id);
  std::vector<std::string> run_ids();
  std::vector<RunSummary> list(const ListFilter& f);
  // The measurements of the runs `f` selects, one Row each, oldest run first,
  // straight from the columns (run.json is not read again): run_id,
  // started_utc, machine (label or id), git_revision, workload, op, pass,
  // layer, backend, dtype, M, N, K, layout, threads, reps, median_s, flop,
  // flop_per_s, headline_source, energy_j, flop_per_j, skipped. The headline
  // columns are each row's own judged source and its figures.
  void each_measurement(const ListFilter& f, const std::function<void(const Row&)>& row);
  // run.json as recorded; nullopt when the id is unknown.
  std::optional<std::string> run_json(const std::string& run_id);
  std::vector<std::string> tags(const std::string& run_id);
  // The run's stored samples (none unless it was recorded with --store-samples).
  std::vector<SampleRow> samples(const std::string& run_id);
  // "latest", "previous" (the one before latest), a run id, or a git revision
  // (its newest run); nullopt when nothing matches.
  std::optional<std::string> resolve_run(const std::string& ref);
  // Ordered by configuration, backend, machine, then start time.
  History history(const HistoryFilter& f);
  Db& db() { return *db_; }

 private:
  Store(Target t, std::unique_ptr<Db> db) : target_(std::move(t)), db_(std::move(db)) {}
  void prepare(bool create);
  void prepare_sqlite(bool create);
  void prepare_postgres(bool create);
  template <class F>
  auto transaction(F&& body);
  friend class Batch;
  void commit_batch();
  void abandon_batch();
  // The run's machine into machines, filling a known machine's NPU.
  void record_machine(const MachineRow& m);
  // A run's configurations (config_id -> key, label) into configs.
  void record_configs(const std::map<std::string, std::pair<std::string, std::string>>& configs);
  Target target_;
  std::unique_ptr<Db> db_;
  int version_ = 0;
  bool batching_ = false, batch_open_ = false;
  std::unordered_set<std::string> checked_configs_;  // ids whose stored key was read back and matched
};

// Many runs recorded in few transactions: a commit waits for the disk (or the
// server's), and an import of thousands of runs spent most of its time there.
// While a Batch lives, Store::record calls share one transaction (each run a
// savepoint in it), committed every half second or 200 runs; a run counts as
// stored once its commit is through. Leaving a Batch without finish() (a
// throw on the way) rolls back what was not committed, and only that: a
// retry records it again, and nothing twice.
class Batch {
 public:
  explicit Batch(Store& s) : s_(s) { s_.batching_ = true; }
  ~Batch() { s_.abandon_batch(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  // Store::record, committing the batch when it is due.
  bool record(const Run& run, const std::vector<std::string>& tags, const std::vector<SampleRow>& samples = {},
              const std::string* packed = nullptr);
  // Commits what is left and ends the batch.
  void finish();
  // Runs this batch has stored so far (committed).
  std::size_t stored() const { return stored_; }

 private:
  void commit();
  Store& s_;
  std::size_t stored_ = 0, pending_ = 0;
  double opened_s_ = 0;
};

// The bad input a DbError on store `t` is: what is true (a full disk, a
// read-only file or directory, a damaged file, a missing privilege, a lock
// held, a server gone) with the fix for that, and only a damaged file is told
// to be moved aside.
InputError store_error(const Target& t, const DbError& e, const std::string& doing = "");

// Runs a command's body over a store; an engine error on the way (a file
// damaged past its header, a disk full, a server gone) becomes bad input
// naming the store, so the command exits 2 with one line instead of an
// internal error.
template <class F>
auto naming_store(const std::string& flag_value, F&& body) {
  try {
    return body();
  } catch (const DbError& e) {
    throw store_error(resolve(flag_value), e);
  }
}

// What every front end passes when a run finishes.
struct RecordOptions {
  std::string store;   // --store (empty: FLOPWATT_STORE or the default)
  bool no_store = false;
  bool samples = false;  // --store-samples: samples.csv goes in too
  std::vector<std::string> tags;
  const std::atomic<bool>* stop = nullptr;  // set by SIGINT/SIGTERM: stop waiting for a server
};

// Records a finished run from its directory. Never throws and never changes
// the run's outcome: a failure is one warning line on `err` naming the store
// and the fix. A PostgreSQL store out of reach leaves the run in the local
// default store, for `store push`. Returns whether the run is now in a store.
bool record_finished_run(const Run& run, const std::string& run_dir, const RecordOptions& o, std::FILE* err);

}  // namespace flopwatt::store
