// Bad input (a flag, a file, a field): carries where, what and the fix. The CLI
// prints it as one line and exits 2. Probing never throws; running may.
#pragma once
#include <stdexcept>
#include <string>

namespace flopwatt {

class InputError : public std::runtime_error {
 public:
  InputError(std::string where, std::string problem, std::string fix = {})
      : std::runtime_error(where + ": " + problem + (fix.empty() ? "" : "; fix: " + fix)),
        where_(std::move(where)), problem_(std::move(problem)), fix_(std::move(fix)) {}
  const std::string& where() const { return where_; }
  const std::string& problem() const { return problem_; }
  const std::string& fix() const { return fix_; }

 private:
  std::string where_, problem_, fix_;
};

}  // namespace flopwatt
