// `flopwatt site`: the pages a store makes, change points by history's test,
// hostile run ids, and the incremental rebuild (only what changed is written).
#include "harness/analysis/site.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "../store/store_support.h"

namespace flopwatt {
namespace {

namespace fs = std::filesystem;

struct site : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("flopwatt_site_" + std::to_string(::getpid()));
  fs::path out = dir / "site";
  std::unique_ptr<store::Store> s;
  const ChartJs chart{"chart.min.js", "9.9.9", "MIT", "/* not Chart.js: the pages' text is what is checked */"};

  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
    s = store::Store::open(store::Target{(dir / "store.sqlite3").string(), "--store", false});
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string read(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  // Every file of the site with its modification time.
  std::map<std::string, fs::file_time_type> files() {
    std::map<std::string, fs::file_time_type> m;
    for (const auto& e : fs::recursive_directory_iterator(out))
      if (e.is_regular_file()) m[fs::relative(e.path(), out).string()] = e.last_write_time();
    return m;
  }
};

// 4 runs at one speed, then 4 at half of it: a step history marks at the 5th.
TEST_F(site, PagesForMachinesSeriesAndRunsWithHistorysChangePoints) {
  for (int i = 1; i <= 8; ++i)
    ASSERT_TRUE(s->record(testing::variant(fmt::format("r0{}", i), fmt::format("2026-01-0{}T00:00:00Z", i),
                                           i <= 4 ? 1.0 : 2.0), {}));
  const SiteStats st = build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  EXPECT_EQ(st.runs, 8u);
  EXPECT_EQ(st.machines, 1u);
  EXPECT_EQ(st.series, 9u);  // the fixture's 3 shapes x 3 backends
  const std::string index = read(out / "index.html");
  std::size_t series_pages = 0;
  for (const auto& e : fs::directory_iterator(out / "series")) {
    ++series_pages;
    EXPECT_NE(index.find("href=\"series/" + e.path().filename().string() + "\""), std::string::npos);
    const std::string page = read(e.path());
    // The FLOP/s table: every run linked, the change at r05 only, as history's test says.
    for (int i = 1; i <= 8; ++i) {
      const std::string link = fmt::format("<a href=\"../runs/r0{}.html\">", i);
      ASSERT_NE(page.find(link), std::string::npos) << link;
    }
    const auto flops = page.substr(page.find("<h2>FLOP/s</h2>"), page.find("<h2>FLOP/J</h2>") - page.find("<h2>FLOP/s</h2>"));
    std::size_t marks = 0;
    for (std::size_t p = flops.find("<td>change</td>"); p != std::string::npos; p = flops.find("<td>change</td>", p + 1))
      ++marks;
    EXPECT_EQ(marks, 1u) << e.path();
    const auto row_r05 = flops.substr(flops.find("r05</a>"));
    EXPECT_NE(row_r05.substr(0, row_r05.find("</tr>")).find("<td>change</td>"), std::string::npos);
  }
  EXPECT_EQ(series_pages, 9u);
  for (int i = 1; i <= 8; ++i) {
    EXPECT_TRUE(fs::exists(out / fmt::format("runs/r0{}.html", i)));
    EXPECT_NE(index.find(fmt::format("href=\"runs/r0{}.html\"", i)), std::string::npos);
  }
  const std::string run_page = read(out / "runs/r01.html");
  EXPECT_NE(run_page.find("<script src=\"../assets/chart.min.js\">"), std::string::npos);
  EXPECT_EQ(read(out / "assets/chart.min.js"), chart.source);
}

TEST_F(site, HostileRunIdsMakePlainFileNamesAndEscapedText) {
  const std::string evil = "../<script>alert(1)</script>\"\n";
  ASSERT_TRUE(s->record(testing::variant(evil, "2026-01-01T00:00:00Z"), {}));
  build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  const std::string page = site_run_page(evil);
  EXPECT_EQ(page.rfind("runs/run-", 0), 0u) << page;
  EXPECT_EQ(page.find('/', 5), std::string::npos) << page;
  EXPECT_TRUE(fs::exists(out / page));
  const std::string index = read(out / "index.html");
  EXPECT_EQ(index.find("<script>alert"), std::string::npos);
  EXPECT_NE(index.find(html_escape(evil)), std::string::npos);
  EXPECT_EQ(read(out / page).find("<script>alert"), std::string::npos);
}

// After one new run only its page, the series it adds a point to, the index
// and the manifest are written; a rebuild with nothing new writes nothing.
TEST_F(site, RebuildWritesOnlyWhatChanged) {
  for (int i = 1; i <= 3; ++i)
    ASSERT_TRUE(s->record(testing::variant(fmt::format("r0{}", i), fmt::format("2026-01-0{}T00:00:00Z", i)), {}));
  build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  const auto before = files();
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24);
  for (const auto& [f, t] : before) fs::last_write_time(out / f, old);
  flopwatt::Run r = testing::variant("r04", "2026-01-04T00:00:00Z");
  r.measurements.resize(1);  // one configuration on one backend: one series gains a point
  ASSERT_TRUE(s->record(r, {}));
  const SiteStats st = build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  std::set<std::string> written;
  std::size_t series_written = 0;
  for (const auto& [f, t] : files())
    if (t != old) {
      written.insert(f);
      series_written += f.rfind("series/", 0) == 0;
    }
  EXPECT_EQ(series_written, 1u);
  EXPECT_TRUE(written.count("runs/r04.html"));
  EXPECT_TRUE(written.count("index.html"));
  EXPECT_TRUE(written.count("site.json"));
  EXPECT_EQ(written.size(), 4u) << ::testing::PrintToString(written);
  EXPECT_EQ(st.written, 4u);
  EXPECT_EQ(files().size(), before.size() + 1);
  const SiteStats again = build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  EXPECT_EQ(again.written, 0u);
}

// The site shows what the store holds: a run gone from it (the site rebuilt
// from a store without it) loses its page, and a series with no runs left
// loses its page too; files the site never made are left alone.
TEST_F(site, RunsGoneFromTheStoreLoseTheirPages) {
  for (int i = 1; i <= 3; ++i)
    ASSERT_TRUE(s->record(testing::variant(fmt::format("r0{}", i), fmt::format("2026-01-0{}T00:00:00Z", i)), {}));
  build_site(*s, SiteOptions{out.string(), 0.05}, chart);
  ASSERT_TRUE(fs::exists(out / "runs/r02.html"));
  std::set<std::string> series_before;
  for (const auto& e : fs::directory_iterator(out / "series")) series_before.insert(e.path().filename().string());
  ASSERT_FALSE(series_before.empty());
  { std::ofstream(out / "runs/notes.html") << "a user's own file\n"; }

  auto smaller = store::Store::open(store::Target{(dir / "smaller.sqlite3").string(), "--store", false});
  flopwatt::Run r = testing::variant("r01", "2026-01-01T00:00:00Z");
  r.measurements.resize(1);  // one series of the three runs' many
  ASSERT_TRUE(smaller->record(r, {}));
  const SiteStats st = build_site(*smaller, SiteOptions{out.string(), 0.05}, chart);
  EXPECT_TRUE(fs::exists(out / "runs/r01.html"));
  EXPECT_FALSE(fs::exists(out / "runs/r02.html"));
  EXPECT_FALSE(fs::exists(out / "runs/r03.html"));
  EXPECT_TRUE(fs::exists(out / "runs/notes.html"));
  std::size_t series_after = 0;
  for (const auto& e : fs::directory_iterator(out / "series")) series_after += e.path().extension() == ".html";
  EXPECT_EQ(series_after, 1u);
  EXPECT_EQ(st.removed, 2 + series_before.size() - 1);
  EXPECT_EQ(read(out / "index.html").find("r02"), std::string::npos);
}

}  // namespace
}  // namespace flopwatt
