#include "harness/store/schema.h"

namespace flopwatt::store {

const std::vector<std::string>& migrations() {
  static const std::vector<std::string> m = {
      // 0 -> 1
      R"(
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE machines (
  machine_id TEXT PRIMARY KEY, label TEXT, hostname TEXT, cpu TEXT, cores INTEGER, memory_bytes BIGINT,
  kernel TEXT, arch TEXT, npu_device TEXT, npu_firmware TEXT);
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY, machine_id TEXT NOT NULL REFERENCES machines (machine_id),
  started_utc TEXT, ended_utc TEXT, complete INTEGER NOT NULL, command TEXT, command_line TEXT,
  flopwatt_version TEXT, git_revision TEXT, headline_source TEXT, supply TEXT, recorded_utc TEXT,
  run_json TEXT NOT NULL);
CREATE INDEX runs_started ON runs (started_utc);
CREATE INDEX runs_git ON runs (git_revision);
CREATE TABLE run_tags (
  run_id TEXT NOT NULL REFERENCES runs (run_id), tag TEXT NOT NULL, PRIMARY KEY (run_id, tag));
CREATE TABLE measurements (
  run_id TEXT NOT NULL REFERENCES runs (run_id), idx INTEGER NOT NULL, config_key TEXT NOT NULL, label TEXT,
  workload TEXT, op TEXT, pass TEXT, layer INTEGER, backend TEXT, dtype TEXT, m BIGINT, n BIGINT, k BIGINT,
  layout TEXT, threads INTEGER, simulated INTEGER, skipped TEXT, reps INTEGER, median_s DOUBLE PRECISION,
  flop DOUBLE PRECISION, flop_per_s DOUBLE PRECISION, energy_j DOUBLE PRECISION, flop_per_j DOUBLE PRECISION,
  rep_times_s TEXT, PRIMARY KEY (run_id, idx));
CREATE INDEX measurements_key ON measurements (config_key, backend);
CREATE TABLE energy (
  run_id TEXT NOT NULL REFERENCES runs (run_id), idx INTEGER NOT NULL, source_id TEXT NOT NULL,
  window_t0_ns BIGINT, window_t1_ns BIGINT, j DOUBLE PRECISION, net_j DOUBLE PRECISION,
  avg_power_w DOUBLE PRECISION, flop_per_j DOUBLE PRECISION, flop_per_j_net DOUBLE PRECISION, confidence TEXT,
  PRIMARY KEY (run_id, idx, source_id));
CREATE TABLE samples (
  run_id TEXT NOT NULL REFERENCES runs (run_id), source_id TEXT NOT NULL, t_ns BIGINT NOT NULL,
  value DOUBLE PRECISION, unit TEXT);
CREATE INDEX samples_run ON samples (run_id);
)",
      // 1 -> 2: each measurement's own judged headline source (energy_j and
      // flop_per_j are that source's); Store backfills it from run_json.
      R"(
ALTER TABLE measurements ADD COLUMN headline_source TEXT;
)",
      // 2 -> 3: run.json compressed in run_doc (harness/store/run_doc.h), a
      // seventh of run_json's text; run_json is '' and rep_times_s NULL from
      // then on (the repetition times are in the document). Store converts
      // the runs already stored. BYTEA is PostgreSQL's bytes; SQLite takes
      // any type name and keeps a blob as it is given. The index on
      // (config_key, backend) served no query (history filters by op and
      // backend) and was a sixth of a store's bytes.
      R"(
ALTER TABLE runs ADD COLUMN run_doc BYTEA;
DROP INDEX measurements_key;
)",
      // 3 -> 4: each configuration's key and label once, in configs, instead
      // of in every measurement (85 of a row's 250 bytes): a fleet measures
      // the same few hundred configurations thousands of times. config_id is
      // the key's 63-bit FNV-1a hash (Store assigns it, one rule on both
      // engines, no sequence). Store fills config_id and drops the two
      // columns after this.
      R"(
CREATE TABLE configs (config_id BIGINT PRIMARY KEY, config_key TEXT NOT NULL UNIQUE, label TEXT);
ALTER TABLE measurements ADD COLUMN config_id BIGINT REFERENCES configs (config_id);
)",
  };
  return m;
}

}  // namespace flopwatt::store
