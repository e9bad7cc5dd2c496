#include "harness/output/writer.h"

#include <sstream>
#include <stdexcept>

#include "harness/output/console_writer.h"
#include "harness/output/csv_writer.h"
#include "harness/output/text.h"

namespace flopwatt {

namespace {

// A file that always holds the whole run, rewritten on every event.
class WholeFileWriter : public Writer {
 public:
  WholeFileWriter(std::string file, std::function<std::string(const Run&)> render, WriterTarget t)
      : file_(std::move(file)), render_(std::move(render)), t_(std::move(t)) {}
  void context(const Run& run) override { write(run); }
  void measurement(const Run& run, const Measurement&) override { write(run); }
  void finalize(const Run& run) override { write(run); }

 private:
  void write(const Run& run) { t_.replace_file(file_, render_(run)); }
  std::string file_;
  std::function<std::string(const Run&)> render_;
  WriterTarget t_;
};

class ConsoleWriter : public Writer {
 public:
  explicit ConsoleWriter(WriterTarget t) : t_(std::move(t)) {}
  void context(const Run&) override { print_row_header(t_.stream); }
  void measurement(const Run& run, const Measurement& m) override { print_row(t_.stream, run, m); }
  void finalize(const Run& run) override { print_summary(t_.stream, run, t_.out_dir); }

 private:
  WriterTarget t_;
};

// A sysfs name or a path with invalid UTF-8 becomes U+FFFD rather than losing the whole report.
std::string render_json(const Run& run) {
  return to_json(run).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_csv(const Run& run) {
  std::ostringstream os;
  write_measurements_csv(run, os);
  return os.str();
}

}  // namespace

std::vector<std::string> writer_names() { return {"json", "csv", "console"}; }

std::unique_ptr<Writer> make_writer(const std::string& name, const WriterTarget& target) {
  if (name == "json") return std::make_unique<WholeFileWriter>("run.json", render_json, target);
  if (name == "csv") return std::make_unique<WholeFileWriter>("measurements.csv", render_csv, target);
  if (name == "console") return std::make_unique<ConsoleWriter>(target);
  throw std::invalid_argument("unknown writer '" + name + "': use one of " + join(writer_names(), ", "));
}

}  // namespace flopwatt
