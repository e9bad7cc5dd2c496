// Bad input to the power library (a malformed external power log): where,
// what, and the fix. power/ may not include workloads/error.h, so it has its
// own type; the CLI maps it to the same one-line message and exit status 2.
#pragma once
#include <stdexcept>
#include <string>

namespace flopwatt::power {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string where, std::string problem, std::string fix = {})
      : std::runtime_error(where + ": " + problem + (fix.empty() ? "" : "; fix: " + fix)),
        where_(std::move(where)), problem_(std::move(problem)), fix_(std::move(fix)) {}
  const std::string& where() const { return where_; }
  const std::string& problem() const { return problem_; }
  const std::string& fix() const { return fix_; }

 private:
  std::string where_, problem_, fix_;
};

}  // namespace flopwatt::power
