#include "harness/cli/cli_errors.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace flopwatt {

std::vector<CLI::App*> command_path(CLI::App& app, int argc, char** argv) {
  std::vector<CLI::App*> path{&app};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--")) break;
    if (argv[i][0] == '-') continue;
    for (CLI::App* sub : path.back()->get_subcommands({}))
      if (sub->check_name(argv[i])) {
        path.push_back(sub);
        break;
      }
  }
  return path;
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// Every flag the command takes, as typed: "--repeat", "-o".
std::vector<std::string> flags_of(const CLI::App& cmd) {
  std::vector<std::string> out{"--help"};
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string command_name(const std::vector<CLI::App*>& path) {
  std::string name = "flopwatt";
  for (std::size_t i = 1; i < path.size(); ++i) name += " " + path[i]->get_name();
  return name;
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(word, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

std::string parse_error_line(CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  const std::vector<CLI::App*> path = command_path(app, argc, argv);
  const std::string name = command_name(path);
  const std::string fix = "; fix: run `" + name + " --help` for its options";
  const std::vector<std::string> flags = flags_of(*path.back());
  // Left-over arguments come from a flag the command does not take: name that flag.
  for (int i = 1; i < argc && dynamic_cast<const CLI::ExtrasError*>(&e); ++i) {
    if (!std::strcmp(argv[i], "--")) break;
    const std::string arg = argv[i];
    const bool flag_like = arg.size() >= 2 && arg[0] == '-' &&
                           (std::isalpha(static_cast<unsigned char>(arg[1])) ||
                            (arg[1] == '-' && arg.size() > 2 && std::isalpha(static_cast<unsigned char>(arg[2]))));
    if (!flag_like) continue;  // a value such as -5
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end() || flag == "--version") continue;
    // A flag of a parent command is known there (--version, a store option of `store`).
    bool parent = false;
    for (std::size_t p = 0; p + 1 < path.size() && !parent; ++p) {
      const auto pf = flags_of(*path[p]);
      parent = std::find(pf.begin(), pf.end(), flag) != pf.end();
    }
    if (parent) continue;
    const std::string near = closest(flag, flags);
    return name + ": unknown option " + flag + (near.empty() ? "" : " (did you mean " + near + "?)") + fix;
  }
  std::string what = e.what();
  if (what.empty()) what = e.get_name();
  return name + ": " + what + fix;
}

}  // namespace flopwatt
