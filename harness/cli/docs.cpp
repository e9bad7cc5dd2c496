#include "harness/cli/docs.h"

#include <algorithm>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "harness/run/backend_registry.h"
#include "workloads/gpt2/op_table.h"
#include "workloads/shapes.h"

namespace flopwatt {

const std::vector<DocEntry>& exit_statuses() {
  static const std::vector<DocEntry> t = {
      {"0", "success"},
      {"1", "an internal failure, a failed verification (the row is kept, marked) or a failed NPU selftest"},
      {"2", "bad input: one line on stderr names the flag, file or field and the fix; nothing ran"},
      {"3", "compare --fail-on-regression found a regression"},
      {"130", "interrupted (Ctrl-C); the partial run is kept, marked incomplete"},
      {"measure", "returns the measured program's own status (128+N for signal N; 127 or 126 when it cannot start)"},
  };
  return t;
}

const std::vector<DocEntry>& environment_variables() {
  static const std::vector<DocEntry> t = {
      {"FLOPWATT_SYSFS_ROOT", "root for every /sys, /dev and /proc read (as --sysfs-root): a fixture or a capture"},
      {"FLOPWATT_STORE", "the results store: a SQLite file or a PostgreSQL URL (as --store)"},
      {"FLOPWATT_MACHINE_LABEL", "the machine's name in the store (as --label)"},
      {"FLOPWATT_PUSHGATEWAY", "a Prometheus Pushgateway each run is pushed to when it ends (as --pushgateway)"},
      {"FLOPWATT_CHARTJS", "the Chart.js file report --format html and site inline (default: Debian's libjs-chart.js)"},
      {"PGCONNECT_TIMEOUT", "seconds a PostgreSQL store's connection may take, where the connection string sets none (default 10)"},
      {"FLOPWATT_PEAK_DIR", "the folder of the measured-ceilings cache"},
      {"FLOPWATT_SCRIPTS", "the folder holding plot.py, for plot"},
      {"FLOPWATT_ONEDNN_PACK", "cpu:onednn weight packing: auto (default), always or never"},
      {"FLOPWATT_NPU_DEVICES", "the folder of NPU device files"},
      {"FLOPWATT_NPU_ARTIFACTS", "the folder of GEMM designs for npu:xdna (scripts/build-npu-designs writes it)"},
      {"FLOPWATT_NPU_HOST_GBS", "the NPU model's host copy rate: measure (default), device, or GB/s"},
      {"FLOPWATT_NPU_DESIGN", "per-shape (default) or single: one padded design for every shape"},
      {"FLOPWATT_NPU_RECONFIG", "simulators: load_pdi (default) or xclbin, per design switch"},
      {"FLOPWATT_NPU_TIMING_ONLY", "1: the NPU simulators skip the numerics (rows unverified)"},
      {"FLOPWATT_REPLAY_START", "set by flopwatt for a campaign's runs so they replay the same moment of a capture"},
      {"XDG_DATA_HOME", "the data directory is $XDG_DATA_HOME/flopwatt (unset: ~/.local/share/flopwatt)"},
      {"XDG_CACHE_HOME", "the ceilings cache is $XDG_CACHE_HOME/flopwatt/peaks (unset: ~/.cache/flopwatt/peaks)"},
      {"HOME", "the base of the two defaults above"},
      {"OPENBLAS_CORETYPE", "when set, flopwatt leaves OpenBLAS's kernel choice alone"},
      {"PGSERVICEFILE, PGPASSFILE, ...", "libpq's own variables, for a PostgreSQL store"},
  };
  return t;
}

const std::vector<DocEntry>& default_files() {
  static const std::vector<DocEntry> t = {
      {"$XDG_DATA_HOME/flopwatt/runs/<run-id>/", "a run's directory when --out is not given (campaign-<run-id>/ for a campaign)"},
      {"$XDG_DATA_HOME/flopwatt/results.sqlite3", "the results store (--store or FLOPWATT_STORE choose another)"},
      {"$XDG_CACHE_HOME/flopwatt/peaks/<host>-<cpu>.json", "the ceilings run peak measured, reused for a week (FLOPWATT_PEAK_DIR moves it)"},
  };
  return t;
}

namespace {

// roff: a leading '.' or '\'' would be a request, a backslash an escape, '-' a hyphen.
std::string roff(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\e";
    else if (c == '-') o += "\\-";
    else o += c;
  }
  if (!o.empty() && (o[0] == '.' || o[0] == '\'')) o.insert(0, "\\&");
  return o;
}

std::vector<const CLI::App*> commands(const CLI::App& app) {
  std::vector<const CLI::App*> v;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) v.push_back(s);
  return v;
}

std::string option_names(const CLI::Option& o) {
  std::string n;
  for (const auto& s : o.get_snames()) n += (n.empty() ? "-" : ", -") + s;
  for (const auto& l : o.get_lnames()) n += (n.empty() ? "--" : ", --") + l;
  if (n.empty()) n = o.get_name();  // a positional
  const std::string type = o.get_type_name();
  if (o.get_type_size() != 0 && !type.empty()) n += " " + type;
  return n;
}

void man_entries(std::ostringstream& m, const std::vector<DocEntry>& t) {
  for (const DocEntry& e : t) m << ".TP\n.B " << roff(e.name) << "\n" << roff(e.meaning) << "\n";
}

std::string footer_entries(const char* title, const std::vector<DocEntry>& t) {
  std::size_t w = 0;
  for (const DocEntry& e : t) w = std::max(w, std::string(e.name).size());
  std::string s = std::string(title) + ":\n";
  for (const DocEntry& e : t) {
    const std::string n = e.name;
    s += "  " + n + std::string(w - n.size() + 2, ' ') + e.meaning + "\n";
  }
  return s;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> v;
  for (const auto& b : all_backends()) v.push_back(b->name());
  return v;
}

// What `history --op` and the reports call operations: the GEMM shapes' ops
// and the training step's.
std::vector<std::string> op_names() {
  std::set<std::string> s = {"step"};
  for (const auto& g : gpt2_gemm_shapes()) s.insert(g.op);
  for (int i = 0; i < gpt2::kNumOps; ++i) s.insert(gpt2::op_info(gpt2::Op(i)).name);
  return {s.begin(), s.end()};
}

// The values a description lists as "a | b (note) | c", in the option tables'
// own words; "Preset: tiny | d12" starts after the colon. Placeholders
// (M,N,K, ID) are not values.
std::vector<std::string> listed_values(const std::string& desc) {
  std::vector<std::string> v;
  if (desc.find(" | ") == std::string::npos) return v;
  static const std::regex value("^[a-z0-9][a-z0-9_.:-]*$");
  std::size_t at = 0;
  for (bool first = true;; first = false) {
    const std::size_t bar = desc.find(" | ", at);
    std::string part = desc.substr(at, bar == std::string::npos ? std::string::npos : bar - at);
    if (first && part.rfind(": ") != std::string::npos) part = part.substr(part.rfind(": ") + 2);
    part = part.substr(0, part.find_first_of(" ("));
    if (std::regex_match(part, value)) v.push_back(part);
    if (bar == std::string::npos) break;
    at = bar + 3;
  }
  return v;
}

std::string option_values(const CLI::Option& o) {
  std::vector<std::string> v;
  const auto& l = o.get_lnames();
  const auto named = [&](const char* n) { return std::find(l.begin(), l.end(), n) != l.end(); };
  if (named("backend") || named("backends") || named("gemm-backend")) {
    v = backend_names();
    if (!named("gemm-backend")) v.insert(v.end(), {"available", "all"});
  } else if (named("op")) {
    v = op_names();
  } else {
    v = listed_values(o.get_description());
  }
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

bool takes_value(const CLI::Option& o) { return o.get_type_size() != 0; }
bool positional(const CLI::Option& o) { return o.get_lnames().empty() && o.get_snames().empty(); }

// The positionals that name a stored run (compare BASE NEW, store show RUN):
// completion asks the store for its run ids when TAB is pressed.
bool names_a_stored_run(const CLI::Option& o) {
  const std::string n = o.get_name();
  return positional(o) && (n == "base" || n == "new" || n == "run");
}

void man_options(std::ostringstream& m, const CLI::App& a) {
  for (const CLI::Option* o : a.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    m << ".TP\n.B " << roff(option_names(*o)) << "\n" << roff(o->get_description()) << "\n";
  }
}

void man_commands(std::ostringstream& m, const CLI::App& a, const std::string& prefix) {
  for (const CLI::App* s : commands(a)) {
    if (s->get_group().empty()) continue;
    const std::string name = prefix + s->get_name();
    m << ".SS " << roff(name) << "\n" << roff(s->get_description()) << "\n";
    man_options(m, *s);
    man_commands(m, *s, name + " ");
  }
}

}  // namespace

std::string help_footer() {
  return "\n" + footer_entries("Exit status", exit_statuses()) + "\n" +
         footer_entries("Environment", environment_variables()) + "\n" +
         footer_entries("Files", default_files()) +
         "\nman flopwatt has all of this; --help-man and --help-bash-completion print the man page and the bash\n"
         "completion the build installs.\n";
}

std::string man_page(const CLI::App& app, const std::string& version) {
  std::ostringstream m;
  m << ".TH FLOPWATT 1 \"\" \"flopwatt " << roff(version) << "\" \"User Commands\"\n"
    << ".SH NAME\nflopwatt \\- FLOP/s and FLOP/J of ML training and of any program, with a stated headline rule\n"
    << ".SH SYNOPSIS\n.B flopwatt\n.I command\n[\\fIoptions\\fR]\n"
    << ".SH DESCRIPTION\n" << roff(app.get_description()) << "\n"
    << ".SH OPTIONS\n";
  man_options(m, app);
  m << ".SH COMMANDS\n";
  man_commands(m, app, "flopwatt ");
  m << ".SH EXIT STATUS\n";
  man_entries(m, exit_statuses());
  m << ".SH ENVIRONMENT\n";
  man_entries(m, environment_variables());
  m << ".SH FILES\nNothing is written to the current directory unless a command is given a path (\\-\\-out).\n";
  man_entries(m, default_files());
  return m.str();
}

// The completion function around the per-path tables: `known` command paths,
// `cases` (words and positional values per path), `values` (per path and option).
static std::string completion_script(const std::string& known, const std::string& cases, const std::string& values) {
  std::ostringstream b;
  b << "# bash completion for flopwatt, written by `flopwatt --help-bash-completion` from its option tables\n"
    << "_flopwatt() {\n"
    << "  # The words up to the cursor, split on blanks only: cpu:onednn and a,b lists stay one word.\n"
    << "  local line=${COMP_LINE:0:COMP_POINT} w i\n"
    << "  local -a ws\n"
    << "  read -ra ws <<< \"$line\"\n"
    << "  [[ -z $line || $line == *[[:space:]] ]] && ws+=(\"\")\n"
    << "  local n=${#ws[@]} cur=${ws[${#ws[@]}-1]} prev=\"\" path=\"\" dashdash=0\n"
    << "  (( n >= 2 )) && prev=${ws[n-2]}\n"
    << "  local -A known=(" << known << " )\n"
    << "  # The command path: the words before the cursor that are not options or their values.\n"
    << "  for ((i = 1; i < n - 1; i++)); do\n"
    << "    w=${ws[i]}\n"
    << "    if [[ $w == -- ]]; then dashdash=$i; break; fi\n"
    << "    [[ $w == -* ]] && continue\n"
    << "    [[ -n ${known[\"${path:+$path }$w\"]} ]] && path=\"${path:+$path }$w\"\n"
    << "  done\n"
    << "  COMPREPLY=()\n"
    << "  if (( dashdash > 0 )); then  # measure -- CMD ARGS..: a command, then its files\n"
    << "    if (( dashdash == n - 2 )); then COMPREPLY=($(compgen -c -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
    << "    return\n"
    << "  fi\n"
    << "  local words=\"\" pos=\"\" vals=\"\" takes=0\n"
    << "  case \"$path\" in\n"
    << cases
    << "  esac\n"
    << "  case \"$path|$prev\" in\n"
    << values
    << "  esac\n"
    << "  if (( takes )); then\n"
    << "    if [[ -n $vals ]]; then  # a list: complete the item after the last comma\n"
    << "      local head=\"\" v\n"
    << "      [[ $cur == *,* ]] && head=${cur%,*},\n"
    << "      for v in $(compgen -W \"$vals\" -- \"${cur##*,}\"); do COMPREPLY+=(\"$head$v\"); done\n"
    << "    else\n"
    << "      COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "    fi\n"
    << "  elif [[ $cur == -* ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    << "  else\n"
    << "    if [[ $pos == *@runs* ]]; then  # the store's run ids, and run directories\n"
    << "      pos=\"${pos//@runs/} $(\"${ws[0]}\" store ls --format csv 2>/dev/null | tail -n +2 | cut -d, -f1)\"\n"
    << "      COMPREPLY=($(compgen -d -- \"$cur\"))\n"
    << "    fi\n"
    << "    COMPREPLY+=($(compgen -W \"${words//--*/} $pos\" -- \"$cur\"))\n"
    << "    [[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "  fi\n"
    << "  # bash replaces only what follows the last ':' of the word (COMP_WORDBREAKS).\n"
    << "  if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then\n"
    << "    local pre=${cur%\"${cur##*:}\"}\n"
    << "    COMPREPLY=(\"${COMPREPLY[@]#\"$pre\"}\")\n"
    << "  fi\n"
    << "}\n"
    << "complete -F _flopwatt flopwatt\n";
  return b.str();
}

std::string bash_completion(const CLI::App& app) {
  // Per command path: the words a user may type next there (`cases`), the
  // values of each option that takes one (`values`, empty: a file name), and
  // the values of its positional argument (history's metric).
  std::ostringstream cases, values, known;
  std::function<void(const CLI::App&, const std::string&)> walk = [&](const CLI::App& a, const std::string& path) {
    std::string words, pos;
    for (const CLI::App* s : commands(a))
      if (!s->get_group().empty()) words += s->get_name() + " ";
    for (const CLI::Option* o : a.get_options()) {
      if (o->get_group().empty()) continue;
      if (positional(*o)) {
        pos += names_a_stored_run(*o) ? std::string("latest previous @runs ") : option_values(*o) + " ";
        continue;
      }
      for (const auto& l : o->get_lnames()) words += "--" + l + " ";
      for (const auto& s : o->get_snames()) words += "-" + s + " ";
      if (!takes_value(*o)) continue;
      const std::string v = option_values(*o);
      for (const auto& l : o->get_lnames()) values << "    \"" << path << "|--" << l << "\") takes=1 vals=\"" << v << "\" ;;\n";
      for (const auto& s : o->get_snames()) values << "    \"" << path << "|-" << s << "\") takes=1 vals=\"" << v << "\" ;;\n";
    }
    cases << "    \"" << path << "\") words=\"" << words << "\" pos=\"" << pos << "\" ;;\n";
    if (!path.empty()) known << " [\"" << path << "\"]=1";
    for (const CLI::App* s : commands(a))
      if (!s->get_group().empty()) walk(*s, path.empty() ? s->get_name() : path + " " + s->get_name());
  };
  walk(app, "");
  return completion_script(known.str(), cases.str(), values.str());
}

}  // namespace flopwatt
