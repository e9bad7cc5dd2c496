// `flopwatt measure [options] -- CMD ARGS..`: any program under the sampler, as
// `perf stat -- CMD` runs one: time, energy and average power per source, the
// headline by the one rule, FLOP/J given --flop; the child's stdin and stdout
// untouched (flopwatt's own lines go to stderr), its exit status passed
// through, signals sent to flopwatt forwarded to it.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/core.h>

#include "harness/cli/commands.h"
#include "harness/output/headline_view.h"
#include "harness/run/run_setup.h"
#include "harness/run/statistics.h"
#include "npu/xdna/fork_guard.h"
#include "workloads/error.h"

namespace flopwatt {

namespace {

struct MeasureArgs {
  RunCommonOptions common;
  int repeat = 1;
  double flop = 0;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child = 0;

// A signal someone sent to flopwatt (kill, a job manager) goes on to the
// child. One the terminal sent to the whole foreground group (Ctrl-C) has
// reached the child already: forwarding it would deliver it twice.
void forward(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child;
  if (child > 0 && info && (info->si_code == SI_USER || info->si_code == SI_QUEUE)) ::kill(child, sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void install_forwarding() {
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
}

struct ChildRun {
  int status = 0;           // as a shell reports it: the exit code, or 128 + the signal
  int signal = 0;           // the signal that ended it, 0 when it exited
  bool started = true;
  std::string error;        // why it could not start
  std::int64_t t0 = 0, t1 = 0;
};

// fork + execvp; an exec failure comes back through a close-on-exec pipe, so
// "could not start" (127, 126) is told apart from a program that exits 127.
ChildRun run_child(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  ChildRun r;
  npu::xdna::release_contexts_before_fork();  // a child's close would end them (npu/xdna/fork_guard.h)
  r.t0 = EnergyMeter::now_ns();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : kForwarded) sigaction(s, &dfl, nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    [[maybe_unused]] const auto n = ::write(fds[1], &err, sizeof err);
    ::_exit(127);
  }
  g_child = pid;
  ::close(fds[1]);
  int err = 0;
  ssize_t got;
  do got = ::read(fds[0], &err, sizeof err);
  while (got < 0 && errno == EINTR);
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  r.t1 = EnergyMeter::now_ns();
  if (got == sizeof err) {
    r.started = false;
    r.status = err == ENOENT ? 127 : 126;
    r.error = std::strerror(err);
    fmt::print(stderr, "flopwatt measure: cannot run '{}': {}\n", command.front(), r.error);
    return r;
  }
  if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  return r;
}

// What happened to the program, for run.json's context.measured_exit and the reason a run is
// incomplete: a failed, killed or unstartable program's figures are not a measurement of its work.
nlohmann::json exit_json(const ChildRun& c, int repetition, int repeat) {
  nlohmann::json j = {{"status", c.status}, {"started", c.started}, {"repetition", repetition},
                      {"repetitions_asked", repeat}};
  j["signal"] = c.signal ? nlohmann::json(c.signal) : nlohmann::json(nullptr);
  j["signal_name"] = c.signal ? nlohmann::json(std::string("SIG") + (sigabbrev_np(c.signal) ? sigabbrev_np(c.signal) : "?"))
                              : nlohmann::json(nullptr);
  if (!c.started) j["error"] = c.error;
  return j;
}

std::string failure_text(const ChildRun& c, const std::string& program) {
  if (!c.started) return fmt::format("'{}' could not start: {}", program, c.error);
  if (c.signal)
    return fmt::format("'{}' was killed by signal {} (SIG{})", program, c.signal,
                       sigabbrev_np(c.signal) ? sigabbrev_np(c.signal) : "?");
  return fmt::format("'{}' exited with status {}", program, c.status);
}

std::string program_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The measurement's op: the program's name and its arguments, so `history` keeps `sleep 1` and
// `sleep 2` apart (a series is one op), quoted where an argument would read as two.
std::string command_text(const std::vector<std::string>& command) {
  std::string out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    std::string arg = i == 0 ? program_name(command[0]) : command[i];
    if (arg.empty() || arg.find_first_of(" \t\n'\"\\") != std::string::npos) {
      std::string q = "'";
      for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = q + "'";
    }
    out += (i ? " " : "") + arg;
  }
  return out;
}

void print_measurement(const Run& run, const Measurement& m) {
  std::FILE* f = stderr;
  fmt::print(f, "\n flopwatt measure: {} ({} run{})\n\n", m.op, m.reps, m.reps == 1 ? "" : "s");
  const TimeStats& t = m.time_s;
  if (m.reps > 1)
    fmt::print(f, "  {:>12.4f} s   time (median; min {:.4f}, max {:.4f}, total {:.4f})\n", t.median, t.min, t.max,
               t.total);
  else
    fmt::print(f, "  {:>12.4f} s   time\n", t.median);
  // FLOP/s needs no power source: it is printed whenever --flop is given.
  if (m.flop > 0) fmt::print(f, "  {:>12.4g} GFLOP/s (at the median time)\n", m.flop_per_s * 1e-9);
  for (const auto& [id, e] : m.energy) {
    std::string extra;
    if (e.net_j) extra += fmt::format(", net {:.4g} J", *e.net_j);
    if (e.flop_per_j) extra += fmt::format(", {:.4g} GFLOP/J", *e.flop_per_j * 1e-9);
    fmt::print(f, "  {:>12.4g} J   {:<32} {:8.3f} W{}{}\n", e.j, id, e.avg_power_w, extra,
               e.confidence == "low" ? "  (low confidence: " + e.why_low + ")" : "");
  }
  if (m.energy.empty()) fmt::print(f, "  no power source sampled (flopwatt sources says why)\n");
  const HeadlineView h = headline_of(run, m);
  if (h.source && m.energy.count(*h.source)) {
    const EnergyFigures& e = m.energy.at(*h.source);
    fmt::print(f, "\n  headline: {} {:.4g} J, {:.3f} W", *h.source, e.j, e.avg_power_w);
    if (e.flop_per_j) fmt::print(f, ", {:.4g} GFLOP/J", *e.flop_per_j * 1e-9);
    if (m.flop > 0) fmt::print(f, ", {:.4g} GFLOP/s", m.flop_per_s * 1e-9);
    // The figure's standing goes on the line people quote from, not only on its source's line.
    if (e.confidence == "low") fmt::print(f, " (low confidence: {})", e.why_low);
    fmt::print(f, "\n");
  } else if (!m.energy.empty()) {
    fmt::print(f, "\n  headline: none ({})\n", h.why);
  }
}

int run_measure(CLI::App* cmd, MeasureArgs& a) {
  finalize_run_common_options(cmd, a.common);
  if (a.command.empty())
    throw InputError("measure", "no command to run", "put the program after --: flopwatt measure -- ./train_gpt2");
  if (a.repeat < 1) throw InputError("--repeat", "must be >= 1", "pass for example --repeat 5");
  if (a.flop < 0 || !std::isfinite(a.flop))
    throw InputError("--flop", "must be a FLOP count >= 0", "pass the program's FLOP per run, e.g. --flop 1.2e12");
  nlohmann::json extra = {{"command", "measure"}, {"measured_command", a.command}};
  OpenRun r = start_run(a.common, {}, extra, stderr);
  install_forwarding();  // after open_run, whose handler only marks an interrupt

  Measurement m;
  m.workload = "measure";
  m.op = command_text(a.command);
  m.backend = "process";
  m.flop = a.flop;
  int status = 0;
  std::int64_t t0 = 0, t1 = 0;
  std::optional<ChildRun> failed;
  int failed_at = 0;
  for (int i = 0; i < a.repeat; ++i) {
    const ChildRun c = run_child(a.command);
    status = c.status;
    if (status != 0 || !c.started) {
      // A failing run ends the repetitions; its status is flopwatt's. Its time is no repetition of
      // the work: the figures are over the runs before it, or, when the first run failed, over that
      // run alone, recorded as what happened in an incomplete run.
      failed = c;
      failed_at = i + 1;
      if (i == 0 && c.started) {
        t0 = c.t0;
        t1 = c.t1;
        m.rep_times_s.push_back(double(c.t1 - c.t0) * 1e-9);
      }
      break;
    }
    if (i == 0) t0 = c.t0;
    t1 = c.t1;
    m.rep_times_s.push_back(double(c.t1 - c.t0) * 1e-9);
  }
  const std::string program = a.command.front();
  if (failed) {
    r.session->run().context["measured_exit"] = exit_json(*failed, failed_at, a.repeat);
    r.session->run().context["incomplete_reason"] =
        failure_text(*failed, program) +
        (a.repeat > 1 ? fmt::format(" in repetition {} of {}", failed_at, a.repeat) : std::string()) +
        (failed_at > 1 ? fmt::format("; the figures are over the {} repetition(s) before it", failed_at - 1)
                       : std::string());
  } else {
    r.session->run().context["measured_exit"] = {{"status", 0}, {"started", true}, {"signal", nullptr},
                                                     {"signal_name", nullptr}, {"repetition", a.repeat},
                                                     {"repetitions_asked", a.repeat}};
  }
  const bool measured = !m.rep_times_s.empty();
  if (measured) {
    m.reps = int(m.rep_times_s.size());
    m.time_s = summarize(m.rep_times_s);
    m.window_ns = {t0, t1};
    if (m.flop > 0 && m.time_s.median > 0) {
      m.flop_per_s = m.flop / m.time_s.median;
      m.flop_per_s_window = m.flop * m.reps / m.time_s.total;
    }
    m.energy = r.meter->window(t0, t1, m.flop * m.reps);
    r.meter->judge(m, t0, t1);
    r.session->add(m);
  }
  const int code = end_run(r, !failed, stderr, RunEnding::kReportPath);
  if (measured) print_measurement(r.session->run(), r.session->run().measurements.back());
  return status != 0 ? status : code;
}

}  // namespace

void register_measure(CLI::App& app, CliState& st) {
  auto* cmd = app.add_subcommand(
      "measure", "Run any program under the power sampler, as `perf stat -- CMD` does: flopwatt measure [options] -- CMD ARGS..");
  auto a = std::make_shared<MeasureArgs>();
  a->common.power.idle_s = 0;  // an idle baseline only when asked for (--idle S)
  cmd->add_option("--repeat", a->repeat, "Run the program N times (the spread of its times is reported)");
  cmd->add_option("--flop", a->flop, "FLOP one run of the program performs: gives FLOP/s and FLOP/J");
  cmd->add_option("--power", a->common.power.power, "Power sources: auto, none, or ID[,ID..] (see `flopwatt sources`)");
  cmd->add_option("--sysfs-root", a->common.power.sysfs_root,
                  "Filesystem root for /sys, /dev and /proc reads (default / or $FLOPWATT_SYSFS_ROOT)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--power-log", a->common.power.power_log, "External meter log or pipe with 't_seconds,watts' lines");
  cmd->add_option("--idle", a->common.power.idle_s, "Seconds of idle-power baseline before the program (default 0: none)");
  cmd->add_option("--sample-period", a->common.power.sample_period_s, "Power sampling period in seconds");
  cmd->add_option("--headline-domain", a->common.power.headline_domain,
                  "Domain of the headline FLOP/J (default: the widest available)");
  cmd->add_option("--out", a->common.out, "Output directory (default $XDG_DATA_HOME/flopwatt/runs/<run-id>, else ~/.local/share/flopwatt/runs/<run-id>)");
  cmd->add_flag("--overwrite", a->common.overwrite, "Replace a run already in the --out directory (refused otherwise)");
  add_store_options(cmd, a->common.store, a->common.no_store);
  add_push_option(cmd, a->common.pushgateway);
  cmd->add_option("--tag", a->common.tags, "Tag the run in the results store (repeatable)");
  cmd->add_flag("--store-samples", a->common.store_samples, "Record samples.csv in the results store too");
  cmd->add_option("--label", a->common.machine_label,
                  "This machine's name in the results store (default $FLOPWATT_MACHINE_LABEL)");
  cmd->add_option("command", a->command, "The program and its arguments, after --");
  cmd->callback([cmd, a, &st] { st.exit_code = run_measure(cmd, *a); });
}

}  // namespace flopwatt
