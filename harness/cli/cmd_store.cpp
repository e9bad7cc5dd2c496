// `flopwatt store import|ls|show|export|push|init`: the results store
// (harness/store/store.h) from the command line.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>

#include "harness/analysis/report.h"
#include "harness/cli/commands.h"
#include "harness/cli/ordered_parallel.h"
#include "harness/output/headline_view.h"
#include "harness/output/json_text.h"
#include "harness/output/text.h"
#include "harness/run/session.h"
#include "harness/run/timing.h"
#include "harness/store/run_doc.h"
#include "harness/store/store.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct StoreArgs {
  std::string store;
  std::vector<std::string> dirs;
  store::ListFilter filter;
  std::string run, format = "md", url;
};

std::unique_ptr<store::Store> open_store(const StoreArgs& a, bool create) {
  return store::Store::open(store::resolve(a.store), create);
}

// The units `store import` loads one at a time: a run or campaign directory
// is one; a folder of them is each of its direct subdirectories that is one
// (load_runs' rule), so one bad run.json does not hide the others.
std::vector<std::string> import_units(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec) || fs::exists(d / "run.json", ec) || fs::exists(d / "campaign.json", ec)) return {dir};
  std::vector<std::string> subs;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.is_directory(ec) && (fs::exists(e.path() / "run.json", ec) || fs::exists(e.path() / "campaign.json", ec)))
      subs.push_back(e.path().string());
  std::sort(subs.begin(), subs.end());
  if (subs.empty()) return {dir};  // load_runs says why it is none of these
  return subs;
}

// One import unit as a worker leaves it: a run dir read, its id looked up in
// the runs the store had, and a new run parsed and its text packed; or a
// campaign (or what load_runs says is none), left to the importing thread.
struct PreparedUnit {
  std::string file;
  bool by_load_runs = false, present = false;
  std::optional<Run> run;
  std::string packed;
  std::optional<InputError> error;
};

PreparedUnit prepare_unit(const std::string& unit, const std::unordered_set<std::string>& known) {
  PreparedUnit p;
  p.file = (std::filesystem::path(unit) / "run.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(p.file, ec)) {
    p.by_load_runs = true;
    return p;
  }
  try {
    // A run dir is read once: a run the store has is known by its id alone,
    // without building its document (a re-import of thousands does little
    // else), and a new one is stored as its text.
    const std::string text = read_run_text(p.file);
    const auto id = top_level_string(text, "run_id");
    if (id && !id->empty() && known.count(*id)) {
      p.present = true;
      return p;
    }
    p.run = run_from_text(p.file, text);
    p.present = known.count(p.run->run_id) > 0;
    if (!p.present && !p.run->run_id.empty()) p.packed = store::pack_run_doc(minified_json(text));
  } catch (const InputError& e) {
    p.error = e;
  }
  return p;
}

int do_import(const StoreArgs& a) {
  // Ctrl-C then ends the import between runs with what it recorded committed,
  // instead of rolling back the batch in flight.
  install_interrupt_handler();
  auto s = open_store(a, true);
  std::size_t present = 0, refused = 0;
  auto refuse = [&refused](const std::string& what, const std::string& why) {
    ++refused;
    fmt::print(stderr, "flopwatt: store import: {}: {}\n", what, why);
  };
  store::Batch batch(*s);
  auto record = [&](const Run& run, const std::string& file, const std::string* packed) {
    if (run.run_id.empty())
      return refuse(file, "has no run_id (the key a run is stored by); fix: restore the run_id flopwatt wrote");
    if (!batch.record(run, {}, {}, packed)) ++present;  // another writer, or a second copy, was first
  };
  std::vector<std::string> units;
  for (const auto& d : a.dirs)
    for (auto& u : import_units(d)) units.push_back(std::move(u));
  // The ids stored before this import, asked once: present runs are not
  // written out again (their JSON, a transaction), so re-importing is cheap.
  const auto ids = s->run_ids();
  const std::unordered_set<std::string> known(ids.begin(), ids.end());
  // Parsing and packing is most of an import's CPU: it runs on every core,
  // and the store is written in the units' order on this thread.
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  struct Interrupted {};
  std::size_t done = 0;
  try {
    ordered_parallel<PreparedUnit>(
        units.size(), threads, 4 * std::size_t{threads}, [&](std::size_t i) { return prepare_unit(units[i], known); },
        [&](std::size_t i, PreparedUnit p) {
          // Ctrl-C stops between runs: what is recorded is committed below.
          if (g_interrupted.load()) throw Interrupted{};
          done = i + 1;
          try {
            if (p.error) throw *p.error;
            if (p.by_load_runs) {
              for (const auto& lr : load_runs(units[i]))
                record(lr.run, (std::filesystem::path(lr.dir) / "run.json").string(), nullptr);
            } else if (p.present) {
              ++present;
            } else {
              record(*p.run, p.file, p.packed.empty() ? nullptr : &p.packed);
            }
          } catch (const InputError& e) {
            refuse(e.where(), e.problem() + (e.fix().empty() ? "" : "; fix: " + e.fix()));
          }
        });
  } catch (const Interrupted&) {
    batch.finish();
    fmt::print(stderr,
               "flopwatt: store import: interrupted after {} of {} run dir(s); {} run(s) stored stay; fix: run the same "
               "command again: the runs already there are skipped\n",
               done, units.size(), batch.stored());
    return 130;
  }
  batch.finish();
  fmt::print("imported {} run(s) into {}; {} already there{}\n", batch.stored(), store::masked(s->target().spec),
             present, refused ? fmt::format("; {} refused (each named above)", refused) : "");
  return refused ? 2 : 0;
}

int do_ls(const StoreArgs& a) {
  auto s = open_store(a, false);
  const auto runs = s->list(a.filter);
  if (a.format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : runs)
      j.push_back({{"run_id", r.run_id}, {"machine_id", r.machine_id}, {"machine_label", r.machine_label},
                   {"started_utc", r.started_utc}, {"command", r.command}, {"git_revision", r.git_revision},
                   {"headline_source", r.headline_source}, {"complete", r.complete},
                   {"measurements", r.measurements}, {"tags", r.tags}});
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  if (a.format == "csv") {
    fmt::print("run_id,started_utc,machine,command,git_revision,complete,measurements,tags\n");
    for (const auto& r : runs)
      fmt::print("{},{},{},{},{},{},{},{}\n", csv_escape(r.run_id), csv_escape(r.started_utc),
                 csv_escape(r.machine_label.empty() ? r.machine_id : r.machine_label), csv_escape(r.command),
                 csv_escape(r.git_revision), r.complete ? 1 : 0, r.measurements, csv_escape(join(r.tags, ";")));
    return 0;
  }
  if (a.format != "md") throw InputError("--format " + a.format, "unknown format", "use md, csv or json");
  fmt::print("| run id | started (UTC) | machine | command | git | complete | rows | tags |\n"
             "|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : runs)
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_cell(r.run_id), md_cell(r.started_utc),
               md_cell(r.machine_label.empty() ? r.machine_id : r.machine_label), md_cell(r.command),
               md_cell(r.git_revision), r.complete ? "yes" : "**no**", r.measurements, md_cell(join(r.tags, ", ")));
  fmt::print("\n{} run(s) in {}\n", runs.size(), md_cell(store::masked(s->target().spec)));
  return 0;
}

LoadedRun stored_run(store::Store& s, const std::string& ref, const std::string& what) {
  const auto id = s.resolve_run(ref);
  if (!id)
    throw InputError(what + " " + ref, "names no run in " + store::masked(s.target().spec),
                     "pass a run id from `flopwatt store ls`, latest, previous, or a git revision");
  LoadedRun lr;
  lr.label = *id;
  lr.run = run_from_json(nlohmann::json::parse(*s.run_json(*id)));
  return lr;
}

int do_show(const StoreArgs& a) {
  auto s = open_store(a, false);
  const LoadedRun lr = stored_run(*s, a.run, "RUN");
  if (a.format == "json") {
    fmt::print("{}\n", to_json(lr.run).dump(2));
    return 0;
  }
  const ReportFormat& f = report_format(a.format, "--format");
  // CSV is the table alone, for a program to read; markdown says the run's tags first.
  const auto tags = s->tags(lr.run.run_id);
  if (a.format != "csv" && !tags.empty()) fmt::print("tags: {}\n\n", join(tags, ", "));
  fmt::print("{}", f.render({lr}, ReportOptions{}));
  return 0;
}

int do_export(const StoreArgs& a) {
  auto s = open_store(a, false);
  if (a.format == "json") {
    // One run at a time: the whole array is never held.
    const auto runs = s->list(a.filter);
    std::fputs("[", stdout);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      auto j = nlohmann::json::parse(*s->run_json(runs[i].run_id));
      j["store_tags"] = runs[i].tags;
      fmt::print("{}\n{}", i ? "," : "", j.dump(2));
    }
    fmt::print("\n]\n");
    return 0;
  }
  if (a.format != "csv") throw InputError("--format " + a.format, "unknown format", "use csv or json");
  // Straight from the columns, streamed; numbers in their shortest exact form,
  // the headline columns each row's own judged source and its figures.
  std::string out =
      "run_id,started_utc,machine,git_revision,workload,op,pass,layer,backend,dtype,M,N,K,layout,threads,"
      "reps,median_s,flop,flop_per_s,headline_source,energy_j,flop_per_j,skipped\n";
  static constexpr std::size_t kNumeric[] = {16, 17, 18, 20, 21};  // REAL columns
  s->each_measurement(a.filter, [&out](const store::Row& r) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (c) out += ',';
      if (!r[c]) continue;
      if (std::find(std::begin(kNumeric), std::end(kNumeric), c) != std::end(kNumeric))
        out += shortest(std::strtod(r[c]->c_str(), nullptr));
      else out += csv_escape(*r[c]);
    }
    out += '\n';
    if (out.size() > (1u << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  });
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int do_init(const StoreArgs& a) {
  const store::Target t = a.url.empty() ? store::resolve(a.store) : store::resolve(a.url, "URL");
  auto s = store::Store::open(t, true);
  fmt::print("store {} ready (schema version {})\n", store::masked(t.spec), s->schema_version());
  return 0;
}

int do_push(const StoreArgs& a) {
  install_interrupt_handler();  // as in do_import
  auto local = open_store(a, false);
  const store::Target rt = store::resolve(a.url, "URL");
  auto remote = store::Store::open(rt, true);
  std::set<std::string> there;
  for (auto& id : remote->run_ids()) there.insert(std::move(id));
  const auto ids = local->run_ids();
  std::size_t todo = 0;
  for (const auto& id : ids) todo += there.count(id) ? 0 : 1;
  // Runs go in batches, each run keyed by its id: a retry after a drop sends
  // what is missing (the batch in flight included) and nothing twice.
  store::Batch batch(*remote);
  try {
    for (const auto& id : ids) {
      if (there.count(id)) continue;
      if (g_interrupted.load()) {  // Ctrl-C stops between runs; what was sent is committed
        batch.finish();
        fmt::print(stderr,
                   "flopwatt: store push {}: interrupted after {} of {} run(s); fix: run `flopwatt store push` again "
                   "to send the rest\n",
                   store::masked(rt.spec), batch.stored(), todo);
        return 130;
      }
      const Run run = run_from_json(nlohmann::json::parse(*local->run_json(id)));
      batch.record(run, local->tags(id), local->samples(id));
    }
    batch.finish();
  } catch (const store::DbError& e) {
    fmt::print(stderr,
               "flopwatt: store push {}: stopped after {} of {} run(s): {}; fix: run `flopwatt store push` again "
               "when the server is back (the local store keeps every run)\n",
               store::masked(rt.spec), batch.stored(), todo, e.what());
    return 1;
  }
  fmt::print("pushed {} run(s) to {}; {} already there\n", batch.stored(), store::masked(rt.spec), ids.size() - todo);
  return 0;
}

}  // namespace

void register_store(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand("store", "The results store: every run recorded (SQLite by default, PostgreSQL for a fleet)");
  cmd->require_subcommand(1);
  auto a = std::make_shared<StoreArgs>();
  auto common = [&](CLI::App* c) { add_store_option(c, a->store); };
  auto filters = [&](CLI::App* c) {
    c->add_option("--machine", a->filter.machine, "Only runs of this machine (label, hostname or id)");
    c->add_option("--since", a->filter.since, "Only runs started at or after this UTC date or time (2026-11-01)");
    c->add_option("--tag", a->filter.tag, "Only runs with this tag");
  };
  auto* imp = cmd->add_subcommand("import", "Record run directories (or campaign dirs) in the store; importing twice adds nothing");
  common(imp);
  imp->add_option("dirs", a->dirs, "Run directories, campaign directories or folders of runs")->required();
  imp->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return do_import(*a); }); });
  auto* ls = cmd->add_subcommand("ls", "List the stored runs, oldest first");
  common(ls);
  filters(ls);
  ls->add_option("--format", a->format, "md (default) | csv | json");
  ls->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return do_ls(*a); }); });
  auto* show = cmd->add_subcommand("show", "One stored run as `report` shows a run directory");
  common(show);
  show->add_option("run", a->run, "Run id, latest, previous, or a git revision")->required();
  show->add_option("--format", a->format, "md (default) | csv | json");
  show->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return do_show(*a); }); });
  auto* exp = cmd->add_subcommand("export", "Stored runs as CSV (one line per measurement) or JSON (run.json per run)");
  common(exp);
  filters(exp);
  exp->add_option("--format", a->format, "csv | json")->required();
  exp->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return do_export(*a); }); });
  auto* push = cmd->add_subcommand("push", "Send the local runs a shared store does not have yet, one transaction per run");
  common(push);
  push->add_option("url", a->url, "The shared store: postgresql://... or a libpq connection string")->required();
  push->callback([a, &st] { st.exit_code = do_push(*a); });
  auto* init = cmd->add_subcommand("init", "Create or migrate a store's schema (on PostgreSQL: as the owner role)");
  common(init);
  init->add_option("url", a->url, "The store (default: --store, $FLOPWATT_STORE or the default file)");
  init->callback([a, &st] { st.exit_code = store::naming_store(a->store, [&] { return do_init(*a); }); });
}

}  // namespace flopwatt
