// The one line a command-line mistake gets: which word was wrong, the closest real one, and the
// command whose --help lists them. CLI11's own text names the leftover argument, not the flag
// that made it one ("measure --repeats 3 -- true" says "true" was not expected).
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace flopwatt {

// The subcommand path the arguments name ("flopwatt run gemm"), up to a "--".
std::vector<CLI::App*> command_path(CLI::App& app, int argc, char** argv);

// The closest of `known` to `word` within an edit distance that still reads as a typo; empty
// when none is.
std::string closest(const std::string& word, const std::vector<std::string>& known);

// One line, without "flopwatt: " and without a newline, for a parse error of argv.
std::string parse_error_line(CLI::App& app, int argc, char** argv, const CLI::ParseError& e);

}  // namespace flopwatt
