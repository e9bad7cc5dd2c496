// flopwatt: energy and performance benchmarking of ML training on client machines.
#include <fmt/core.h>

#include "harness/cli/cli_errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/docs.h"
#include "harness/output/version.h"
#include "power/config_error.h"
#include "workloads/error.h"

int main(int argc, char** argv) {
  using namespace flopwatt;
  CLI::App app{"flopwatt " FLOPWATT_VERSION ": FLOP/s and FLOP/J of GEMMs and GPT-2 training on CPU and NPU"};
  app.set_version_flag("--version", std::string(FLOPWATT_VERSION) + " (" + FLOPWATT_GIT_REV + ")");
  app.require_subcommand(1);
  CliState st;
  set_command_line(argc, argv);
  std::vector<std::string> args = hide_passwords_from_ps(argc, argv);
  std::vector<char*> kept_argv;
  for (auto& a : args) kept_argv.push_back(a.data());
  kept_argv.push_back(nullptr);
  argv = kept_argv.data();
  auto* run = app.add_subcommand("run", "Run a workload and write a report");
  run->require_subcommand(1);
  register_run_gemm(*run, st);
  register_run_default(*run, st);
  register_run_peak(*run, st);
  register_run_gpt2(*run, st);
  register_backends(app, st);
  register_sources(app, st);
  register_npu(app, st);
  register_campaign(app, st);
  register_report(app, st);
  register_plot(app, st);
  register_store(app, st);
  register_history(app, st);
  register_compare(app, st);
  register_measure(app, st);
  register_capture(app, st);
  register_serve(app, st);
  register_site(app, st);
  // The man page and completion the build installs, from the tables above; the
  // footer (set after the subcommands, which would inherit it) is the man page's tail.
  app.footer(help_footer());
  if (argc == 2 && std::string(argv[1]) == "--help-man") {
    fmt::print("{}", man_page(app, FLOPWATT_VERSION));
    return 0;
  }
  if (argc == 2 && std::string(argv[1]) == "--help-bash-completion") {
    fmt::print("{}", bash_completion(app));
    return 0;
  }
  if (argc > 1 && argv[1][0] != '-') {  // CLI11 would only say "a subcommand is required"
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      fmt::print(stderr, "flopwatt: unknown command '{}'; fix: run `flopwatt --help` for the commands\n", argv[1]);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the flag, exit 2 (the contract), instead of CLI11's own codes.
    fmt::print(stderr, "{}\n", parse_error_line(app, argc, argv, e));
    return 2;
  } catch (const power::ConfigError& e) {
    fmt::print(stderr, "flopwatt: {}\n", e.what());
    return 2;
  } catch (const InputError& e) {
    fmt::print(stderr, "flopwatt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "flopwatt: internal error: {}\n", e.what());
    return 1;
  }
  return st.exit_code;
}
