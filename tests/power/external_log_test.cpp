#include "power/external_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "fixture_tree.h"
#include "power/clock.h"
#include "power/sampler.h"

using namespace flopwatt::power;
using flopwatt::power::testing::FixtureTree;

namespace {

std::vector<Sample> parse(const std::string& text, std::int64_t opened = 1'000'000'000) {
  PowerLogParser p("meter.csv", opened);
  std::vector<Sample> out;
  p.feed(text.data(), text.size(), out);
  p.finish(out);
  return out;
}

}  // namespace

TEST(ExternalLog, RelativeClockCountsFromOpening) {
  auto s = parse("# clock: relative\n# any comment\n0.0,40.5\n\n0.5, 41.0\r\n1.0,39\n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].t_ns, 1'000'000'000);
  EXPECT_EQ(s[1].t_ns, 1'500'000'000);
  EXPECT_DOUBLE_EQ(s[1].value, 41.0);
  EXPECT_DOUBLE_EQ(s[2].value, 39.0);
}

TEST(ExternalLog, RealtimeClockMapsToMonotonic) {
  const double now_real = double(realtime_ns()) * 1e-9;
  const std::int64_t now_mono = monotonic_ns();
  char text[128];
  std::snprintf(text, sizeof text, "# clock: realtime\n%.3f,25\n", now_real - 2.0);
  auto s = parse(text);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(double(now_mono - s[0].t_ns) * 1e-9, 2.0, 0.05);
}

TEST(ExternalLog, ChunksSplitMidLine) {
  PowerLogParser p("m", 0);
  std::vector<Sample> out;
  const std::string a = "# clock: relative\n1.0,1", b = "0.0\n2.0,20.0\n";
  p.feed(a.data(), a.size(), out);
  EXPECT_TRUE(out.empty());
  p.feed(b.data(), b.size(), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].value, 10.0);
}

TEST(ExternalLog, MalformedLineNamesFileAndLine) {
  try {
    parse("# clock: relative\n0.0,40\n0.5;41\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "meter.csv:3");
    EXPECT_NE(e.problem().find("malformed"), std::string::npos);
    EXPECT_NE(e.fix().find("t_seconds,watts"), std::string::npos);
  }
  EXPECT_THROW(parse("# clock: relative\n0.0,abc\n"), ConfigError);
  EXPECT_THROW(parse("# clock: relative\n0.0,-3\n"), ConfigError);
  EXPECT_THROW(parse("# clock: relative\n0.0,nan\n"), ConfigError);
  EXPECT_THROW(parse("# clock: sundial\n"), ConfigError);
  // Found by tests/fuzz/fuzz_power_log: a huge stamp overflowed the nanosecond
  // arithmetic (signed overflow) and landed at +7e18 ns; now out of range.
  EXPECT_THROW(parse("# clock: realtime\n6e66,5\n"), ConfigError);
  EXPECT_THROW(parse("# clock: realtime\n17000000020.0,12.5\n"), ConfigError);
  EXPECT_THROW(parse("# clock: relative\n-1,5\n"), ConfigError);
  EXPECT_THROW(parse("# clock: relative\n0.0,2e6\n"), ConfigError);
}

TEST(ExternalLog, SampleBeforeClockHeaderIsAnError) {
  try {
    parse("0.0,40\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "meter.csv:1");
    EXPECT_NE(e.problem().find("clock"), std::string::npos);
  }
}

TEST(ExternalLog, TimeGoingBackwardsIsDropped) {
  PowerLogParser p("m", 0);
  std::vector<Sample> out;
  const std::string t = "# clock: relative\n1,1\n1,2\n0.5,3\n2,4\n";
  p.feed(t.data(), t.size(), out);
  p.finish(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(p.dropped_out_of_order(), 2u);
}

TEST(ExternalLog, CheckAndOpenFiles) {
  FixtureTree t;
  t.write("wall.csv", "# clock: relative\n0,50\n0.1,52\n");
  EXPECT_NO_THROW(check_power_log(t.path("wall.csv")));
  EXPECT_EQ(external_source_id(t.path("wall.csv")), "external:wall");
  auto src = open_power_log(t.path("wall.csv"));
  EXPECT_EQ(src->id(), "external:wall");
  EXPECT_EQ(src->domain(), "wall");
  std::vector<Sample> out;
  EXPECT_EQ(src->read_many(out), 2u);
  EXPECT_DOUBLE_EQ(out[1].value, 52.0);
  {  // a logger appends: the next read picks it up
    FILE* f = std::fopen(t.path("wall.csv").c_str(), "a");
    std::fputs("0.2,54\n", f);
    std::fclose(f);
  }
  EXPECT_EQ(src->read_many(out), 1u);
  EXPECT_TRUE(src->interval_measured());
  EXPECT_NEAR(src->update_interval_s(), 0.1, 1e-6);

  t.write("bad.csv", "# clock: relative\n0,50\nhello\n");
  EXPECT_THROW(check_power_log(t.path("bad.csv")), ConfigError);
  EXPECT_THROW(check_power_log(t.path("missing.csv")), ConfigError);
}

TEST(ExternalLog, MalformedLineMidRunStopsTheSource) {
  FixtureTree t;
  t.write("m.csv", "# clock: relative\n0,50\n");
  auto src = open_power_log(t.path("m.csv"));
  std::vector<Sample> out;
  src->read_many(out);
  FILE* f = std::fopen(t.path("m.csv").c_str(), "a");
  std::fputs("0.1,oops\n0.2,50\n", f);
  std::fclose(f);
  EXPECT_EQ(src->read_many(out), 0u);
  EXPECT_NE(src->last_error().find("m.csv:3"), std::string::npos);
}

TEST(ExternalLog, FifoDeliversLinesAsTheyArrive) {
  FixtureTree t;
  const std::string fifo = t.path("meter.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(check_power_log(fifo));  // opening consumes nothing
  auto src = open_power_log(fifo);
  std::vector<Sample> out;
  EXPECT_EQ(src->read_many(out), 0u);  // no writer yet: no block, no error
  EXPECT_TRUE(src->last_error().empty());
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const char* text = "# clock: relative\n0.00,30\n0.01,31\n0.02,32\n";
    (void)!::write(fd, text, std::strlen(text));
    ::close(fd);
  });
  writer.join();
  EXPECT_EQ(src->read_many(out), 3u);
  EXPECT_DOUBLE_EQ(out.back().value, 32.0);
}

namespace {

// A meter writing to a FIFO as a separate process, with SIGPIPE at its
// default action (as a shell pipeline's writer has it): it blocks in open(2)
// until a reader opens, then writes a line every 20 ms for `lines` lines.
pid_t fifo_writer(const std::string& fifo, int lines) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::signal(SIGPIPE, SIG_DFL);
  const int fd = ::open(fifo.c_str(), O_WRONLY);
  if (fd < 0) ::_exit(3);
  const char* head = "# clock: relative\n";
  if (::write(fd, head, std::strlen(head)) < 0) ::_exit(4);
  for (int i = 0; i < lines; ++i) {
    ::usleep(20000);
    char l[64];
    const int n = std::snprintf(l, sizeof l, "%.2f,%d\n", 0.02 * i, 30 + i);
    if (::write(fd, l, std::size_t(n)) != n) ::_exit(5);
  }
  ::close(fd);
  ::_exit(0);
}

// How the writer ended: "exit N" or "signal N".
std::string ended(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return "lost";
  if (WIFSIGNALED(st)) return "signal " + std::to_string(WTERMSIG(st));
  return "exit " + std::to_string(WEXITSTATUS(st));
}

}  // namespace

TEST(ExternalLog, CheckingAFifoNeverReleasesItsWriterIntoAClosedPipe) {
  FixtureTree t;
  const std::string fifo = t.path("meter.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t w = fifo_writer(fifo, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the writer waits in open(2)
  // The command line is checked before the run starts; opening and closing
  // the FIFO there let the writer's open return into a pipe with no reader.
  EXPECT_NO_THROW(check_power_log(fifo));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto src = open_power_log(fifo);  // the run's one open
  std::vector<Sample> out;
  for (int i = 0; i < 100 && out.size() < 10; ++i) {
    src->read_many(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ended(w), "exit 0") << "the meter must not die of SIGPIPE";
  EXPECT_EQ(out.size(), 10u);
}

TEST(ExternalLog, DiscoveryOpensAFifoOnceAndReadsItAsAStream) {
  FixtureTree t;
  const std::string fifo = t.path("meter.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t w = fifo_writer(fifo, 10);
  DiscoverOptions o;
  o.root = t.root();
  o.power_log = fifo;
  Discovery d = discover(o);
  PowerSource* src = nullptr;
  for (auto& s : d.sources)
    if (s->id() == "external:meter") src = s.get();
  ASSERT_TRUE(src);
  std::vector<Sample> out;
  for (int i = 0; i < 100 && out.size() < 10; ++i) {
    src->read_many(out);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ended(w), "exit 0");
  EXPECT_EQ(out.size(), 10u);
}

TEST(ExternalLog, AGrowingFileWithOnlyItsHeaderIsReadAsItGrows) {
  FixtureTree t;
  t.write("wall.csv", "# clock: relative\n");  // the meter has just started
  EXPECT_NO_THROW(check_power_log(t.path("wall.csv")));
  auto src = open_power_log(t.path("wall.csv"));
  std::vector<Sample> out;
  EXPECT_EQ(src->read_many(out), 0u);
  FILE* f = std::fopen(t.path("wall.csv").c_str(), "a");
  std::fputs("0.0,40\n0.1,41\n", f);
  std::fclose(f);
  EXPECT_EQ(src->read_many(out), 2u);
  // A file with neither header nor sample is not a power log.
  t.write("empty.csv", "");
  EXPECT_THROW(check_power_log(t.path("empty.csv")), ConfigError);
}

TEST(ExternalLog, ALogWhoseSamplesLieOutsideTheWindowGivesNoFigure) {
  // Stamps a day old on the realtime clock: the sampler gets them, but they
  // cover none of the window.
  FixtureTree t;
  const double day_ago = double(realtime_ns()) * 1e-9 - 86400;
  std::string text = "# clock: realtime\n";
  for (int i = 0; i < 5; ++i) text += std::to_string(day_ago + i) + ",20\n";
  t.write("old.csv", text);
  std::vector<std::unique_ptr<PowerSource>> v;
  v.push_back(open_power_log(t.path("old.csv")));
  Sampler sp(std::move(v), 0.01);
  sp.start();
  const std::int64_t t0 = Sampler::now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::int64_t t1 = Sampler::now_ns();
  const WindowEnergy w = sp.energy("external:old", t0, t1);
  sp.stop();
  EXPECT_TRUE(w.gap);
  EXPECT_EQ(w.j, 0.0);
  EXPECT_NE(w.why_low.find("samples cover 0 s of the"), std::string::npos) << w.why_low;
}
