#include "harness/store/store.h"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <fmt/core.h>

#include "harness/output/data_home.h"
#include "harness/output/headline_view.h"
#include "harness/output/text.h"
#include "harness/store/conninfo.h"
#include "harness/store/run_doc.h"
#include "harness/store/schema.h"
#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt::store {

namespace {

Value opt_text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The shortest text that reads back as the same double (std::to_chars): a
// run of 90 rows formats over 600 numbers, and fmt's "{:.17g}" was a tenth
// of an import's time.
Value num(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
template <class T>
Value num(const std::optional<T>& v) {
  return v ? Value{fmt::format("{}", *v)} : Value{};
}
Value numd(const std::optional<double>& v) { return v ? num(*v) : Value{}; }

// FNV-1a (64 bits): a stable id from what identifies a thing.
std::uint64_t fnv64(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
// A machine's id.
std::string fnv_hex(const std::string& s) { return fmt::format("{:016x}", fnv64(s)); }
// A configuration's id (configs.config_id, schema 4): the hash of its key in
// 63 bits, so it is a positive BIGINT on both engines, the same in every
// store and assigned without asking the store.
std::string config_id_of(const std::string& config_key) { return std::to_string(fnv64(config_key) >> 1); }

// The NPU a run saw, from its backends' notes (harness/run/context.cpp): the
// device node a hardware NPU backend opened (with its generation when known),
// and its firmware when the driver reported a version. A simulated NPU has no
// device node, and a note that only says why the device was absent or the
// query failed is not a device or a firmware.
std::pair<Value, Value> npu_of(const nlohmann::json& context) {
  const auto be = context.find("backends");
  if (be == context.end() || !be->is_object()) return {};
  for (const auto& [name, notes] : be->items()) {
    if (name.rfind("npu:", 0) != 0 || !notes.is_object()) continue;
    const std::string device = notes.value("device", "");
    if (device.empty() || device[0] != '/') continue;
    const std::string generation = notes.value("generation", "");
    const std::string firmware = notes.value("firmware", "");
    const bool version = !firmware.empty() && firmware.find_first_not_of("0123456789.") == std::string::npos &&
                         std::isdigit(static_cast<unsigned char>(firmware[0]));
    return {generation.empty() ? device : device + " (" + generation + ")", version ? Value{firmware} : Value{}};
  }
  return {};
}

std::string where_of(const Target& t) { return "store " + masked(t.spec) + " (from " + t.from + ")"; }

int to_int(const Value& v) { return v ? std::atoi(v->c_str()) : 0; }

// `values` (row after row of `cols` each) inserted by `head` ("INSERT INTO t (...) VALUES "), up to 100 rows a
// statement, each statement ending in `tail`.
void insert_many(Db& db, const std::string& head, std::size_t cols, const std::vector<Value>& values,
                 const std::string& tail = "") {
  constexpr std::size_t kRows = 100;
  const std::size_t n = values.size() / cols;
  for (std::size_t b = 0; b < n; b += kRows) {
    const std::size_t e = std::min(n, b + kRows);
    std::string sql = head;
    for (std::size_t r = b; r < e; ++r) {
      sql += r > b ? ", (" : "(";
      for (std::size_t c = 0; c < cols; ++c) {
        if (c) sql += ", ";
        sql += '$';
        sql += std::to_string((r - b) * cols + c + 1);
      }
      sql += ')';
    }
    sql += tail;
    db.query(sql, std::vector<Value>(values.begin() + static_cast<std::ptrdiff_t>(b * cols),
                                     values.begin() + static_cast<std::ptrdiff_t>(e * cols)));
  }
}

// A measurement's headline as the store keeps it: the source the run judged
// for that row (headline_of, never the run's summary) and that source's figures.
struct RowHeadline {
  Value source, energy_j, flop_per_j;
};
RowHeadline row_headline(const Run& run, const Measurement& m) {
  RowHeadline h;
  const HeadlineView v = headline_of(run, m);
  if (!v.source) return h;
  h.source = *v.source;
  if (auto it = m.energy.find(*v.source); it != m.energy.end()) {
    h.energy_j = num(it->second.j);
    h.flop_per_j = numd(it->second.flop_per_j);
  }
  return h;
}

// Runs `body` in one transaction; rolls back on any error.
template <class F>
auto in_transaction(Db& db, F&& body) {
  db.exec(db.sqlite() ? "BEGIN IMMEDIATE" : "BEGIN");
  try {
    auto r = body();
    db.exec("COMMIT");
    return r;
  } catch (...) {
    try {
      db.exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
}

}  // namespace

namespace {

// Why this user cannot write a SQLite store, or "" when it can: SQLite says
// "unable to open" or "readonly" for both, and the fix differs.
std::string unwritable(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (fs::exists(p, ec) && ::access(path.c_str(), W_OK) != 0) return "the file is read-only for this user";
  if (fs::exists(dir, ec) && ::access(dir.c_str(), W_OK) != 0)
    return "its directory " + dir.string() + " is read-only for this user";
  return "";
}

// Whether a write to the SQLite store at `path` failed for want of space:
// the filesystem nearly full, or a file of the store at the process's file
// size limit (RLIMIT_FSIZE, a quota's kin).
bool out_of_space(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) == 0 && static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) < 1 << 20)
    return true;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
  for (const char* suffix : {"", "-wal", "-journal"}) {
    std::error_code ec;
    const auto size = fs::file_size(path + suffix, ec);
    if (!ec && size + (1u << 16) >= rl.rlim_cur) return true;
  }
  return false;
}

}  // namespace

InputError store_error(const Target& t, const DbError& e, const std::string& doing) {
  const std::string what = (doing.empty() ? "" : doing + ": ") + e.what();
  const std::string file = masked(t.spec);
  DbErrorKind kind = e.kind();
  std::string readonly_why;
  if (!t.postgres && (kind == DbErrorKind::kReadOnly || kind == DbErrorKind::kPermission)) {
    readonly_why = unwritable(t.spec);
    if (!readonly_why.empty()) kind = DbErrorKind::kReadOnly;
  }
  if (!t.postgres && kind == DbErrorKind::kIo && out_of_space(t.spec)) kind = DbErrorKind::kFull;
  switch (kind) {
    case DbErrorKind::kFull:
      return InputError(where_of(t), "no space left to write: a full disk, a quota or a file size limit (" + what + ")",
                        t.postgres ? "free disk space on the server; nothing was half-written (the transaction rolled back)"
                                   : "free space on the filesystem holding " + file +
                                         " (nothing was half-written: the transaction rolled back), or pass --store with "
                                         "a file elsewhere");
    case DbErrorKind::kReadOnly:
      return InputError(where_of(t),
                        "cannot be written: " + (readonly_why.empty() ? "read-only" : readonly_why) + " (" + what + ")",
                        t.postgres ? "connect to the primary server, not a read-only standby"
                                   : "give this user write access to " + file +
                                         " and its directory, or pass --store with a writable file; reading commands "
                                         "(store ls/show/export, history, compare) work on it as it is");
    case DbErrorKind::kPermission:
      return InputError(where_of(t), "cannot be opened: permission or missing directory (" + what + ")",
                        "give this user read access (and write access, to record) to " + file +
                            " and its directory, or pass --store with another file");
    case DbErrorKind::kCorrupt:
      return InputError(where_of(t), "is damaged (" + what + ")",
                        "move the damaged file aside and rebuild the store with `flopwatt store import` from the run "
                        "directories");
    case DbErrorKind::kPrivilege:
      return InputError(where_of(t), "this role lacks a privilege (" + what + ")",
                        "ask the database's owner to GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO this role "
                        "(creating or migrating the schema: `flopwatt store init URL` as the owner)");
    case DbErrorKind::kIo:
      return InputError(where_of(t), "a disk I/O error (" + what + ")",
                        "check the disk holding " + file + " (the kernel log names the device); the transaction was "
                        "rolled back, so run the command again once it is sound");
    case DbErrorKind::kBusy:
      return InputError(where_of(t), "stayed locked by another process (" + what + ")",
                        "let the other flopwatt (an import or push) finish, then run the command again");
    case DbErrorKind::kLost:
      return InputError(where_of(t), "no usable connection to the server: refused, gone or silent (" + what + ")",
                        "check the server runs and the connection string (host, port, dbname, user, connect_timeout), "
                        "then run the command again; passwords belong in ~/.pgpass, PGPASSWORD or a service file");
    case DbErrorKind::kOther:
      break;
  }
  return InputError(where_of(t), what,
                    t.postgres ? "check the server and the connection string, then run the command again"
                               : "pass --store with another file, or --no-store");
}

std::string resolve_default_file() { return (fs::path(data_home()) / "results.sqlite3").string(); }

Target resolve(const std::string& flag_value, const std::string& flag_name) {
  Target t;
  if (!flag_value.empty()) {
    t.spec = flag_value;
    t.from = flag_name;
  } else if (const char* e = std::getenv("FLOPWATT_STORE"); e && *e) {
    t.spec = e;
    t.from = "FLOPWATT_STORE";
  } else {
    t.spec = resolve_default_file();
    t.from = "default";
  }
  if (t.from == "default") return t;  // a file, whatever its directory's name holds ('=', "://")
  const SpecClass c = classify_spec(t.spec);
  if (c.kind == SpecKind::kRefused)
    throw InputError(t.from + " " + masked(t.spec), c.why,
                     "pass postgresql://USER@HOST/DB (password in ~/.pgpass, PGPASSWORD or a service file), "
                     "'host=H dbname=D', or a file path");
  t.postgres = c.kind == SpecKind::kPostgres;
  return t;
}

std::string clean_text(const std::string& s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= n && c != 0;
    for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;                                           // overlong
    if (ok && len == 3) ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);  // overlong, surrogates
    if (ok && len == 4) ok = !(c == 0xF0 && p[i + 1] < 0x90) && c <= 0xF4 && !(c == 0xF4 && p[i + 1] >= 0x90);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  return out;
}

std::unique_ptr<Store> Store::open(const Target& t, bool create, const std::atomic<bool>* stop) {
  std::unique_ptr<Db> db;
  try {
    if (t.postgres) {
      static std::atomic<bool> warned{false};
      if ((t.from == "--store" || t.from == "URL") && !password_of(t.spec).empty() && !warned.exchange(true))
        std::fprintf(stderr,
                     "warning: %s carries a password, which other users can read in the process list and your shell "
                     "history; give it in ~/.pgpass (or PGPASSFILE), a service file (PGSERVICEFILE) or PGPASSWORD "
                     "instead\n",
                     t.from.c_str());
      db = open_postgres(t.spec, stop);
    } else {
      const fs::path p(t.spec);
      std::error_code ec;
      if (!fs::exists(p, ec)) {
        if (!create)
          throw InputError(where_of(t), "does not exist", "record a run first, or pass --store with an existing store");
        if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
        if (ec)
          throw InputError(where_of(t), "cannot create its directory " + p.parent_path().string() + ": " + ec.message(),
                           "pass --store with a writable path, or --no-store");
      } else if (!fs::is_regular_file(p, ec)) {
        throw InputError(where_of(t), "is not a regular file", "pass --store with a file path");
      }
      // A reading command opens a store it cannot write read-only (immutable
      // in a read-only directory, where no -shm can be made), so it still
      // lists; a writable one as before, so no reader leaves -wal/-shm files behind.
      db = open_sqlite(t.spec, create, !create && !unwritable(t.spec).empty());
    }
  } catch (const DbError& e) {
    throw store_error(t, e, "cannot open");
  }
  std::unique_ptr<Store> s(new Store(t, std::move(db)));
  s->prepare(create);
  return s;
}

namespace {

const char* const kNewerFix =
    "use a flopwatt at least as new as the one that wrote it, or pass --store with another store";

void check_newer(const std::string& where, int v) {
  if (v > kSchemaVersion)
    throw InputError(where, fmt::format("has schema version {}, newer than this flopwatt reads ({})", v, kSchemaVersion),
                     kNewerFix);
}

// Both version markers: PRAGMA user_version (SQLite) and the documented
// schema_version table; a store is as new as the newer of the two says.
int table_version(Db& db) { return to_int(db.query("SELECT MAX(version) FROM schema_version").at(0).at(0)); }

// Version 1 stored every row's energy under the run's headline source: each
// row now takes its own judged headline (headline_of), read back from run_json.
void backfill_row_headlines(Db& db) {
  std::vector<std::string> ids;
  db.each("SELECT run_id FROM runs", {}, [&ids](const Row& r) { ids.push_back(*r[0]); });
  for (const auto& id : ids) {
    const auto j = db.query("SELECT run_json FROM runs WHERE run_id = $1", {id});
    const Run run = run_from_json(nlohmann::json::parse(*j.at(0).at(0)));
    for (std::size_t i = 0; i < run.measurements.size(); ++i) {
      const RowHeadline h = row_headline(run, run.measurements[i]);
      db.query("UPDATE measurements SET headline_source = $3, energy_j = $4, flop_per_j = $5 WHERE run_id = $1 AND "
               "idx = $2",
               {id, std::to_string(i), h.source, h.energy_j, h.flop_per_j});
    }
  }
}

// A run's document as the run_doc parameter of `db`: bytes for SQLite (the
// statement casts them to a blob), bytea's hex text for PostgreSQL.
Value packed_param(const Db& db, const std::string& packed) { return db.sqlite() ? packed : bytea_text(packed); }
Value doc_param(const Db& db, const std::string& json) { return packed_param(db, pack_run_doc(json)); }
std::string doc_placeholder(const Db& db, int n) {
  return db.sqlite() ? fmt::format("CAST(${} AS BLOB)", n) : fmt::format("${}", n);
}
std::string doc_json(const Db& db, const std::string& stored) {
  try {
    return unpack_run_doc(db.sqlite() ? stored : bytea_bytes(stored));
  } catch (const std::runtime_error& e) {
    throw DbError(e.what(), DbErrorKind::kCorrupt);
  }
}

// Version 2 kept run.json as text (run_json) and each row's repetition times
// again (rep_times_s): both move into the compressed run_doc.
void pack_stored_runs(Db& db) {
  std::vector<std::string> ids;
  db.each("SELECT run_id FROM runs WHERE run_doc IS NULL", {}, [&ids](const Row& r) { ids.push_back(*r[0]); });
  for (const auto& id : ids) {
    const auto j = db.query("SELECT run_json FROM runs WHERE run_id = $1", {id});
    db.query("UPDATE runs SET run_json = '', run_doc = " + doc_placeholder(db, 2) + " WHERE run_id = $1",
             {id, doc_param(db, j.at(0).at(0).value_or(""))});
  }
  db.exec("UPDATE measurements SET rep_times_s = NULL");
}

// Version 3 kept each row's config_key and label: they move to configs,
// once each, and the rows point at them.
void split_configs(Db& db) {
  std::vector<std::pair<std::string, Value>> configs;
  db.each("SELECT config_key, MIN(label) FROM measurements GROUP BY config_key", {},
          [&configs](const Row& r) { configs.emplace_back(r[0].value_or(""), r[1]); });
  for (const auto& [key, label] : configs)
    db.query("INSERT INTO configs (config_id, config_key, label) VALUES ($1, $2, $3)", {config_id_of(key), key, label});
  db.exec("UPDATE measurements SET config_id = (SELECT c.config_id FROM configs c WHERE c.config_key = "
          "measurements.config_key); ALTER TABLE measurements DROP COLUMN config_key; ALTER TABLE measurements DROP "
          "COLUMN label");
}

void migrate(Db& db, int from) {
  for (int v = from; v < kSchemaVersion; ++v) {
    db.exec(migrations()[static_cast<std::size_t>(v)]);
    if (v == 1) backfill_row_headlines(db);
    if (v == 2) pack_stored_runs(db);
    if (v == 3) split_configs(db);
  }
  db.exec("DELETE FROM schema_version");
  db.query("INSERT INTO schema_version (version) VALUES ($1)", {std::to_string(kSchemaVersion)});
}

}  // namespace

void Store::prepare(bool create) {
  try {
    if (db_->sqlite()) prepare_sqlite(create);
    else prepare_postgres(create);
  } catch (const DbError& e) {
    throw store_error(target_, e, "cannot prepare the schema");
  }
}

void Store::prepare_sqlite(bool create) {
  const std::string where = where_of(target_);
  db_->exec("PRAGMA busy_timeout = 30000");
  db_->exec("PRAGMA foreign_keys = ON");  // a connection setting: writes nothing
  std::error_code ec;
  const bool empty = fs::file_size(target_.spec, ec) == 0 && !ec;
  // WAL: readers go on while one run writes. Set before the first write
  // transaction, and only on a file known to be ours: an empty one.
  if (create && empty) {
    try {
      db_->query("PRAGMA journal_mode = WAL");
    } catch (const DbError&) {
      // another process holds the new file; it sets WAL or this one does after the schema
    }
  }
  // The header is read and the schema made in one transaction, write-locked
  // from its start when creating: a process that reads while another creates
  // the schema sees it all or nothing (three reads outside one transaction
  // once saw the tables without the application id, and refused the file).
  auto not_ours = [&](const DbError& e) {
    // Only a file SQLite finds damaged is "not ours"; a full disk, a
    // read-only file or a held lock is said as what it is.
    if (e.kind() != DbErrorKind::kCorrupt) throw e;
    return InputError(where, std::string("is not a flopwatt store (damaged, or not a SQLite database: ") + e.what() + ")",
                      "pass --store with another file, or move this one aside (it was left untouched)");
  };
  try {
    db_->exec(create ? "BEGIN IMMEDIATE" : "BEGIN");
  } catch (const DbError& e) {
    throw not_ours(e);
  }
  bool migrated = false;
  try {
    int app = 0, user = 0, objects = 0;
    try {
      app = to_int(db_->query("PRAGMA application_id").at(0).at(0));
      user = to_int(db_->query("PRAGMA user_version").at(0).at(0));
      objects = to_int(db_->query("SELECT COUNT(*) FROM sqlite_master").at(0).at(0));
    } catch (const DbError& e) {
      throw not_ours(e);
    }
    if (app != kApplicationId && !(app == 0 && user == 0 && objects == 0))
      throw InputError(where, "is another program's SQLite database (application_id " + std::to_string(app) + ")",
                       "pass --store with another file (this one was left untouched)");
    check_newer(where, user);
    if (app == kApplicationId && user > 0) check_newer(where, table_version(*db_));
    version_ = user;
    if (version_ < kSchemaVersion) {
      if (!create)
        throw InputError(where, fmt::format("has an older schema (version {})", version_),
                         "run `flopwatt store init --store " + masked(target_.spec) +
                             "` once: it migrates the store in place and keeps every run");
      migrate(*db_, version_);
      db_->exec(fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {};", kSchemaVersion, kApplicationId));
      version_ = kSchemaVersion;
      migrated = true;
    }
    db_->exec("COMMIT");
  } catch (...) {
    try {
      db_->exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
  if (migrated) {
    try {
      db_->query("PRAGMA journal_mode = WAL");
    } catch (const DbError&) {
    }
  }
}

void Store::prepare_postgres(bool create) {
  const std::string where = where_of(target_);
  auto read_version = [&] {
    // A catalog table read, not to_regclass: its cache may not yet see a
    // table another session created while this one waited for the lock.
    const auto r = db_->query(
        "SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE tablename = 'schema_version' AND schemaname = "
        "current_schema()");
    return to_int(r.at(0).at(0)) == 0 ? 0 : table_version(*db_);
  };
  version_ = in_transaction(*db_, [&] {
    // One creator at a time, and every check made under the same lock: a
    // writer on a fresh server waits here while another creates the schema.
    if (create) db_->query("SELECT pg_advisory_xact_lock(4657737374)");
    int v = read_version();
    check_newer(where, v);
    if (v == kSchemaVersion) return v;
    if (!create)
      throw InputError(where, v ? fmt::format("has an older schema (version {})", v) : "has no flopwatt schema",
                       "run `flopwatt store init URL` as the database's owner: it migrates in place and keeps every run");
    migrate(*db_, v);
    return kSchemaVersion;
  });
}

std::vector<SampleRow> parse_samples_csv(const std::string& csv) {
  std::vector<SampleRow> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::string id;
    std::size_t p = 0;
    if (!line.empty() && line[0] == '"') {
      for (p = 1; p < line.size(); ++p) {
        if (line[p] == '"' && p + 1 < line.size() && line[p + 1] == '"') id += line[++p];
        else if (line[p] == '"') break;
        else id += line[p];
      }
      p += 1;
    } else {
      p = line.find(',');
      if (p == std::string::npos) continue;
      id = line.substr(0, p);
    }
    std::vector<std::string> rest;
    std::stringstream ss(line.substr(std::min(p + 1, line.size())));
    for (std::string f; std::getline(ss, f, ',');) rest.push_back(f);
    if (rest.size() < 3) continue;
    out.push_back({id, rest[0], rest[1], rest[2]});
  }
  return out;
}

template <class F>
auto Store::transaction(F&& body) {
  if (!batching_) return in_transaction(*db_, std::forward<F>(body));
  if (!batch_open_) {
    db_->exec(db_->sqlite() ? "BEGIN IMMEDIATE" : "BEGIN");
    batch_open_ = true;
  }
  db_->exec("SAVEPOINT run");
  try {
    auto r = body();
    db_->exec("RELEASE SAVEPOINT run");
    return r;
  } catch (const DbError& e) {
    if (e.lost()) throw;  // the whole transaction is gone with the connection
    db_->exec("ROLLBACK TO SAVEPOINT run");
    db_->exec("RELEASE SAVEPOINT run");
    throw;
  }
}

void Store::commit_batch() {
  if (!batch_open_) return;
  batch_open_ = false;
  db_->exec("COMMIT");
}

void Store::abandon_batch() {
  batching_ = false;
  if (!batch_open_) return;
  batch_open_ = false;
  try {
    db_->exec("ROLLBACK");
  } catch (const DbError&) {
    // a connection already gone took the transaction with it
  }
}

namespace {
double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

bool Batch::record(const Run& run, const std::vector<std::string>& tags, const std::vector<SampleRow>& samples,
                   const std::string* packed) {
  // Bounded in time as well as in runs: a batch holds SQLite's write lock,
  // and another writer waits for it.
  constexpr std::size_t kRuns = 200;
  constexpr double kSeconds = 0.5;
  if (pending_ == 0) opened_s_ = monotonic_s();
  const bool added = s_.record(run, tags, samples, packed);
  if (added) ++pending_;
  if (pending_ >= kRuns || monotonic_s() - opened_s_ >= kSeconds) commit();
  return added;
}

void Batch::commit() {
  s_.commit_batch();
  stored_ += pending_;
  pending_ = 0;
}

void Batch::finish() {
  commit();
  s_.batching_ = false;
}

// The machines row a run's context names: its id is the hash of what
// identifies the machine, so every run of one machine finds the same row.
struct MachineRow {
  std::string id;
  Value label, hostname, cpu, cores, memory_bytes, kernel, arch, npu_device, npu_firmware;
};

namespace {

MachineRow machine_of(const nlohmann::json& c) {
  MachineRow m;
  m.hostname = opt_text(c, "hostname");
  m.cpu = opt_text(c, "cpu");
  m.cores = opt_text(c, "online_cpus");
  m.arch = opt_text(c, "arch");
  m.label = opt_text(c, "machine_label");
  m.memory_bytes = opt_text(c, "memory_bytes");
  m.kernel = opt_text(c, "kernel");
  m.id = fnv_hex(m.hostname.value_or("") + "|" + m.cpu.value_or("") + "|" + m.cores.value_or("") + "|" +
                 m.arch.value_or("") + "|" + m.label.value_or(""));
  std::tie(m.npu_device, m.npu_firmware) = npu_of(c);
  return m;
}

// The runs.supply summary: the state at the start, how often it changed, the state at the end.
std::string supply_of(const nlohmann::json& c) {
  const nlohmann::json supply = {
      {"ac_online", c.value("ac_online", nlohmann::json(nullptr))},
      {"battery_percent", c.value("battery_percent", nlohmann::json(nullptr))},
      {"changes", c.contains("supply_changes") ? c["supply_changes"].size() : 0},
      {"ac_online_end", c.contains("supply_end") && c["supply_end"].is_object()
                            ? c["supply_end"].value("ac_online", nlohmann::json(nullptr))
                            : nlohmann::json(nullptr)}};
  return supply.dump();
}

// A run's measurement and energy rows, column after column as the INSERTs in
// Store::record name them, and the configurations they point at.
struct RunRows {
  std::vector<Value> measurements, energy;
  std::map<std::string, std::pair<std::string, std::string>> configs;  // config_id -> key, label
};
RunRows rows_of(const Run& run) {
  RunRows r;
  for (std::size_t i = 0; i < run.measurements.size(); ++i) {
    const Measurement& m = run.measurements[i];
    const std::string idx = std::to_string(i);
    const RowHeadline h = row_headline(run, m);
    const std::string key = config_key(m), id = config_id_of(key);
    r.configs.emplace(id, std::make_pair(key, config_label(m)));
    r.measurements.insert(
        r.measurements.end(),
        {run.run_id, idx, id, m.workload, m.op, m.pass, num(m.layer), m.backend, m.dtype,
         m.shape ? num(double(m.shape->M)) : Value{}, m.shape ? num(double(m.shape->N)) : Value{},
         m.shape ? num(double(m.shape->K)) : Value{}, m.layout, num(m.threads), m.simulated ? "1" : "0", m.skipped,
         std::to_string(m.reps), num(m.time_s.median), num(m.flop), num(m.flop_per_s), h.energy_j, h.flop_per_j,
         Value{}, h.source});  // rep_times_s: in the run's document only
    for (const auto& [src, e] : m.energy)
      r.energy.insert(r.energy.end(),
                      {run.run_id, idx, src, m.window_ns ? Value{std::to_string((*m.window_ns)[0])} : Value{},
                       m.window_ns ? Value{std::to_string((*m.window_ns)[1])} : Value{}, num(e.j), numd(e.net_j),
                       num(e.avg_power_w), numd(e.flop_per_j), numd(e.flop_per_j_net), e.confidence});
  }
  return r;
}

// A run's samples (thousands) through insert_many, a hundred rows a statement.
void insert_samples(Db& db, const std::string& run_id, const std::vector<SampleRow>& samples) {
  std::vector<Value> values;
  values.reserve(samples.size() * 5);
  for (const SampleRow& s : samples) values.insert(values.end(), {run_id, s.source_id, s.t_ns, s.value, s.unit});
  insert_many(db, "INSERT INTO samples (run_id, source_id, t_ns, value, unit) VALUES ", 5, values);
}

}  // namespace

void Store::record_machine(const MachineRow& m) {
  db_->query(
      "INSERT INTO machines (machine_id, label, hostname, cpu, cores, memory_bytes, kernel, arch, npu_device, "
      "npu_firmware) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (machine_id) DO NOTHING",
      {m.id, m.label, m.hostname, m.cpu, m.cores, m.memory_bytes, m.kernel, m.arch, m.npu_device, m.npu_firmware});
  // A machine first recorded by a run without the NPU learns it from a later
  // run that used it. Read first and updated only when something is missing:
  // an update on every run would make concurrent writers of one machine wait
  // for each other.
  if (!m.npu_device) return;
  const auto have = db_->query("SELECT npu_device, npu_firmware FROM machines WHERE machine_id = $1", {m.id});
  if (have.empty() || (have[0][0] && (have[0][1] || !m.npu_firmware))) return;
  // Under a savepoint: a writer role granted only INSERT and SELECT (an
  // older README's advice) still records the run, without the fill.
  db_->exec("SAVEPOINT npu");
  try {
    db_->query("UPDATE machines SET npu_device = COALESCE(npu_device, $2), npu_firmware = COALESCE(npu_firmware, $3) "
               "WHERE machine_id = $1",
               {m.id, m.npu_device, m.npu_firmware});
  } catch (const DbError& e) {
    if (e.lost()) throw;
    db_->exec("ROLLBACK TO SAVEPOINT npu");
  }
  db_->exec("RELEASE SAVEPOINT npu");
}

bool Store::record(const Run& run, const std::vector<std::string>& tags, const std::vector<SampleRow>& samples,
                   const std::string* packed) {
  // The run id is the key: a run without one would be stored as '' and every later one dropped as "already there".
  if (run.run_id.empty())
    throw InputError("run.json", "has no run_id (or an empty one), the key the store records a run by",
                     "record runs written by flopwatt; a run.json edited by hand needs its run_id back");
  const nlohmann::json& c = run.context;
  const MachineRow machine = machine_of(c);
  std::vector<std::string> all_tags = tags;
  if (auto it = c.find("tags"); it != c.end() && it->is_array())
    for (const auto& t : *it)
      if (t.is_string()) all_tags.push_back(t.get<std::string>());
  return transaction([&] {
    record_machine(machine);
    const auto inserted = db_->query(
        "INSERT INTO runs (run_id, machine_id, started_utc, ended_utc, complete, command, command_line, "
        "flopwatt_version, git_revision, headline_source, supply, recorded_utc, run_json, run_doc) VALUES ($1, $2, $3, "
        "$4, $5, $6, $7, $8, $9, $10, $11, $12, '', " + doc_placeholder(*db_, 13) +
            ") ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
        {run.run_id, machine.id, opt_text(c, "started_utc"), opt_text(c, "ended_utc"), run.complete ? "1" : "0",
         opt_text(c, "command"), opt_text(c, "command_line"), run.flopwatt_version, opt_text(c, "flopwatt_git_revision"),
         run_headline(run).json_value(), supply_of(c), utc_now(),
         packed ? packed_param(*db_, *packed) : doc_param(*db_, to_json(run).dump())});
    if (inserted.empty()) return false;  // already recorded: nothing else changes
    for (const auto& t : all_tags)
      db_->query("INSERT INTO run_tags (run_id, tag) VALUES ($1, $2) ON CONFLICT (run_id, tag) DO NOTHING",
                 {run.run_id, clean_text(t)});
    // Many rows per statement: each statement is a round trip to a server.
    const RunRows rows = rows_of(run);
    record_configs(rows.configs);
    insert_many(*db_,
                "INSERT INTO measurements (run_id, idx, config_id, workload, op, pass, layer, backend, dtype, m, n, k, "
                "layout, threads, simulated, skipped, reps, median_s, flop, flop_per_s, energy_j, flop_per_j, "
                "rep_times_s, headline_source) VALUES ",
                24, rows.measurements);
    insert_many(*db_,
                "INSERT INTO energy (run_id, idx, source_id, window_t0_ns, window_t1_ns, j, net_j, avg_power_w, "
                "flop_per_j, flop_per_j_net, confidence) VALUES ",
                11, rows.energy);
    insert_samples(*db_, run.run_id, samples);
    return true;
  });
}

void Store::record_configs(const std::map<std::string, std::pair<std::string, std::string>>& configs) {
  std::vector<Value> values, unchecked;
  for (const auto& [id, key_label] : configs) {
    values.insert(values.end(), {id, key_label.first, key_label.second});
    if (!checked_configs_.count(id)) unchecked.emplace_back(id);
  }
  // Inserted every time, not only when unseen: a batch rolled back takes
  // the configurations it added with it.
  insert_many(*db_, "INSERT INTO configs (config_id, config_key, label) VALUES ", 3, values,
              " ON CONFLICT (config_id) DO NOTHING");
  if (unchecked.empty()) return;
  // Two keys with one hash (odds 2^-63 a pair) would file one configuration's
  // history under the other's name: refused, never stored.
  std::string sql = "SELECT config_id, config_key FROM configs WHERE config_id IN (";
  for (std::size_t i = 0; i < unchecked.size(); ++i) sql += (i ? ", $" : "$") + std::to_string(i + 1);
  for (const auto& r : db_->query(sql + ")", unchecked)) {
    const auto& want = configs.at(r[0].value_or("")).first;
    if (r[1].value_or("") != want)
      throw std::runtime_error(fmt::format("configurations '{}' and '{}' share the id {} in the store", want,
                                           r[1].value_or(""), r[0].value_or("")));
    checked_configs_.insert(*r[0]);
  }
}

bool Store::has_run(const std::string& run_id) {
  return !db_->query("SELECT 1 FROM runs WHERE run_id = $1", {run_id}).empty();
}

std::vector<std::string> Store::run_ids() {
  std::vector<std::string> ids;
  for (const auto& r : db_->query("SELECT run_id FROM runs ORDER BY started_utc, run_id")) ids.push_back(*r.at(0));
  return ids;
}

std::vector<std::string> Store::tags(const std::string& run_id) {
  std::vector<std::string> t;
  for (const auto& r : db_->query("SELECT tag FROM run_tags WHERE run_id = $1 ORDER BY tag", {run_id}))
    t.push_back(*r.at(0));
  return t;
}

std::vector<SampleRow> Store::samples(const std::string& run_id) {
  std::vector<SampleRow> out;
  for (auto& r : db_->query("SELECT source_id, t_ns, value, unit FROM samples WHERE run_id = $1 ORDER BY source_id, t_ns",
                            {run_id}))
    out.push_back({r[0].value_or(""), r[1].value_or(""), std::move(r[2]), std::move(r[3])});
  return out;
}

namespace {

// The WHERE clause of a ListFilter over runs r joined with machines mc.
std::string filter_sql(const ListFilter& f, std::vector<Value>& params) {
  std::string sql = " WHERE 1 = 1";
  auto param = [&](const std::string& v) {
    params.emplace_back(v);
    return "$" + std::to_string(params.size());
  };
  if (!f.machine.empty()) {
    const std::string p = param(f.machine);
    sql += " AND (r.machine_id = " + p + " OR mc.label = " + p + " OR mc.hostname = " + p + ")";
  }
  if (!f.since.empty()) sql += " AND r.started_utc >= " + param(f.since);
  if (!f.tag.empty())
    sql += " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.run_id AND t.tag = " + param(clean_text(f.tag)) + ")";
  return sql;
}

}  // namespace

void Store::each_measurement(const ListFilter& f, const std::function<void(const Row&)>& row) {
  std::vector<Value> params;
  db_->each("SELECT r.run_id, r.started_utc, COALESCE(mc.label, mc.machine_id), r.git_revision, m.workload, m.op, "
            "m.pass, m.layer, m.backend, m.dtype, m.m, m.n, m.k, m.layout, m.threads, m.reps, m.median_s, m.flop, "
            "m.flop_per_s, m.headline_source, m.energy_j, m.flop_per_j, m.skipped FROM measurements m JOIN runs r ON "
            "r.run_id = m.run_id JOIN machines mc ON mc.machine_id = r.machine_id" +
                filter_sql(f, params) + " ORDER BY r.started_utc, r.run_id, m.idx",
            params, row);
}

std::vector<RunSummary> Store::list(const ListFilter& f) {
  std::vector<Value> params;
  std::string sql =
      "SELECT r.run_id, r.machine_id, mc.label, r.started_utc, r.command, r.git_revision, r.headline_source, "
      "r.complete, (SELECT COUNT(*) FROM measurements m WHERE m.run_id = r.run_id) FROM runs r JOIN machines mc ON "
      "mc.machine_id = r.machine_id" + filter_sql(f, params);
  sql += " ORDER BY r.started_utc, r.run_id";
  std::vector<RunSummary> out;
  for (const auto& r : db_->query(sql, params)) {
    RunSummary s;
    s.run_id = *r[0];
    s.machine_id = *r[1];
    s.machine_label = r[2].value_or("");
    s.started_utc = r[3].value_or("");
    s.command = r[4].value_or("");
    s.git_revision = r[5].value_or("");
    s.headline_source = r[6].value_or("");
    s.complete = to_int(r[7]) != 0;
    s.measurements = to_int(r[8]);
    out.push_back(std::move(s));
  }
  for (auto& s : out) s.tags = tags(s.run_id);
  return out;
}

std::optional<std::string> Store::run_json(const std::string& run_id) {
  const auto r = db_->query("SELECT run_doc, run_json FROM runs WHERE run_id = $1", {run_id});
  if (r.empty()) return std::nullopt;
  if (r[0][0]) return doc_json(*db_, *r[0][0]);
  return r[0][1];
}

std::optional<std::string> Store::resolve_run(const std::string& ref) {
  std::vector<Row> r;
  if (ref == "latest" || ref == "previous")
    r = db_->query(std::string("SELECT run_id FROM runs ORDER BY started_utc DESC, run_id DESC LIMIT 1 OFFSET ") +
                   (ref == "latest" ? "0" : "1"));
  else if (has_run(ref))
    return ref;
  else if (ref.size() >= 4)
    r = db_->query(
        "SELECT run_id FROM runs WHERE substr(git_revision, 1, length(CAST($1 AS TEXT))) = CAST($1 AS TEXT) "
        "ORDER BY started_utc DESC, run_id DESC LIMIT 1",
        {ref});
  if (r.empty()) return std::nullopt;
  return r[0][0];
}

History Store::history(const HistoryFilter& f) {
  static const std::map<std::string, std::string> columns = {
      {"flop_per_s", "m.flop_per_s"}, {"flop_per_j", "m.flop_per_j"}, {"median_s", "m.median_s"},
      {"energy_j", "m.energy_j"}};
  const auto col = columns.find(f.metric);
  if (col == columns.end())
    throw InputError("METRIC " + f.metric, "is not a stored metric",
                     "pass one of flop_per_s, flop_per_j, median_s, energy_j");
  History h;
  // The runs first, oldest first (a thousand rows), then the measurements
  // alone: a join repeated each run's text on every one of its rows.
  std::string runs_sql =
      "SELECT r.run_id, r.started_utc, r.git_revision, COALESCE(mc.label, mc.machine_id) FROM runs r JOIN machines mc "
      "ON mc.machine_id = r.machine_id";
  std::vector<Value> run_params;
  if (!f.machine.empty()) {
    runs_sql += " WHERE mc.machine_id = $1 OR mc.label = $1 OR mc.hostname = $1";
    run_params.emplace_back(f.machine);
  }
  db_->each(runs_sql, run_params, [&](const Row& r) {
    h.runs.push_back({*r[0], r[1].value_or(""), r[2].value_or(""), r[3].value_or("")});
  });
  std::vector<HistoryRun*> by_time;
  for (auto& r : h.runs) by_time.push_back(&r);
  std::sort(by_time.begin(), by_time.end(), [](const HistoryRun* a, const HistoryRun* b) {
    return std::tie(a->started_utc, a->run_id) < std::tie(b->started_utc, b->run_id);
  });
  std::unordered_map<std::string, std::size_t> rank;  // run id -> place in time order
  for (std::size_t i = 0; i < by_time.size(); ++i) rank.emplace(by_time[i]->run_id, i);

  std::string sql = "SELECT m.run_id, c.config_key, c.label, m.backend, " + col->second +
                    " FROM measurements m JOIN configs c ON c.config_id = m.config_id WHERE " + col->second +
                    " IS NOT NULL AND m.skipped IS NULL";
  std::vector<Value> params;
  auto param = [&](const std::string& v) {
    params.emplace_back(v);
    return "$" + std::to_string(params.size());
  };
  if (!f.backend.empty()) sql += " AND m.backend = " + param(f.backend);
  if (!f.op.empty()) sql += " AND m.op = " + param(f.op);
  struct Ranked {
    std::size_t rank;
    double value;
  };
  std::unordered_map<std::string, std::size_t> series_of;
  std::vector<std::vector<Ranked>> points;
  std::string key;
  db_->each(sql, params, [&](const Row& r) {
    const auto run = rank.find(*r[0]);
    if (run == rank.end()) return;  // another machine's run
    const HistoryRun& hr = *by_time[run->second];
    key.assign(r[1].value_or("")).append(1, '\0').append(r[3].value_or("")).append(1, '\0').append(hr.machine);
    auto s = series_of.find(key);
    if (s == series_of.end()) {
      s = series_of.emplace(key, h.series.size()).first;
      h.series.push_back({r[1].value_or(""), r[2].value_or(""), r[3].value_or(""), hr.machine});
      points.emplace_back();
    }
    points[s->second].push_back({run->second, std::strtod(r[4]->c_str(), nullptr)});
  });
  // Ordered by configuration, backend and machine, each series oldest first.
  std::vector<std::size_t> order(h.series.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const HistorySeries &x = h.series[a], &y = h.series[b];
    return std::tie(x.config_key, x.backend, x.machine) < std::tie(y.config_key, y.backend, y.machine);
  });
  std::size_t total = 0;
  for (const auto& v : points) total += v.size();
  h.points.reserve(total);
  for (std::size_t k : order) {
    auto& v = points[k];
    std::sort(v.begin(), v.end(), [](const Ranked& a, const Ranked& b) { return a.rank < b.rank; });
    for (const Ranked& p : v) h.points.push_back({by_time[p.rank], &h.series[k], p.value});
  }
  return h;
}

namespace {

std::string shell_quoted(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// What stays true when recording failed, and how to record later.
std::string after(const std::string& run_dir) {
  if (run_dir.empty()) return "the run's own output is unaffected; --no-store skips the store";
  return "the run directory " + run_dir + " is complete; `flopwatt store import " + run_dir +
         "` records it later, --no-store skips the store";
}

}  // namespace

bool record_finished_run(const Run& run, const std::string& run_dir, const RecordOptions& o, std::FILE* err) {
  if (o.no_store) return false;
  Target t;
  std::vector<SampleRow> samples;
  auto record_in = [&](const Target& target) {
    auto s = Store::open(target, true, o.stop);
    s->record(run, o.tags, samples);
  };
  try {
    t = resolve(o.store);
    if (o.samples) {
      std::ifstream f(fs::path(run_dir) / "samples.csv", std::ios::binary);
      samples = parse_samples_csv(std::string(std::istreambuf_iterator<char>(f), {}));
    }
    try {
      record_in(t);
      return true;
    } catch (const std::exception& e) {
      if (!t.postgres) throw;
      const auto* db = dynamic_cast<const DbError*>(&e);
      const auto* bad = dynamic_cast<const InputError*>(&e);
      const std::string why = db ? store_error(t, *db).problem() : bad ? bad->problem() : e.what();
      // A shared server out of reach, slow or interrupted: the run waits in the local store for `store push`.
      const Target local{resolve_default_file(), "default", false};
      record_in(local);
      fmt::print(err, "warning: run {} not recorded in {}: {}; kept in {} instead (`flopwatt store push {} --store {}` sends "
                      "it when the server is back)\n",
                 run.run_id, where_of(t), why, local.spec, shell_quoted(masked(t.spec)), shell_quoted(local.spec));
      return true;
    }
  } catch (const DbError& e) {
    fmt::print(err, "warning: run {} not recorded: {} ({})\n", run.run_id, store_error(t, e).what(), after(run_dir));
    return false;
  } catch (const std::exception& e) {
    fmt::print(err, "warning: run {} not recorded in the results store: {} ({})\n", run.run_id, e.what(), after(run_dir));
    return false;
  }
}

}  // namespace flopwatt::store
