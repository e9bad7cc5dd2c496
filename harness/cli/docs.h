// The man page and the bash completion, written from the same CLI11 option
// tables `--help` prints, so the three cannot drift apart. The build runs
// `flopwatt --help-man` and `flopwatt --help-bash-completion` and installs
// what they print. The exit statuses, environment variables and files are one
// table each here; the man page and `flopwatt --help`'s footer both print them.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace flopwatt {

struct DocEntry {
  const char* name;
  const char* meaning;
};

// Every exit status flopwatt gives, and what it means.
const std::vector<DocEntry>& exit_statuses();
// Every environment variable flopwatt reads (tests/harness/cli/docs_test.cpp
// checks the list against the getenv calls of the source tree).
const std::vector<DocEntry>& environment_variables();
// The files and directories flopwatt writes without being given a path.
const std::vector<DocEntry>& default_files();

// `flopwatt --help`'s footer: the three tables, short.
std::string help_footer();
std::string man_page(const CLI::App& app, const std::string& version);
std::string bash_completion(const CLI::App& app);

}  // namespace flopwatt
