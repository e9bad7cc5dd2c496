// The man page and the bash completion, written from the same CLI11 option
// tables `--help` prints, so the three cannot drift apart. The build runs
// `flopwatt --help-man` and `flopwatt --help-bash-completion` and installs
// what they print.
#pragma once
#include <string>

#include <CLI/CLI.hpp>

namespace flopwatt {

std::string man_page(const CLI::App& app, const std::string& version);
std::string bash_completion(const CLI::App& app);

}  // namespace flopwatt
