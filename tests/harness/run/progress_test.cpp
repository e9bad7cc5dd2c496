// The progress line's arithmetic and text, without a terminal.
#include "harness/run/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace flopwatt {
namespace {

TEST(Progress, EtaExtrapolatesTheMeanItemTime) {
  EXPECT_FALSE(eta_seconds(0, 10, 5.0).has_value());  // no finished item: no rate yet
  EXPECT_DOUBLE_EQ(*eta_seconds(2, 10, 4.0), 16.0);   // 2 s per item, 8 left
  EXPECT_DOUBLE_EQ(*eta_seconds(3, 4, 9.0), 3.0);
  EXPECT_DOUBLE_EQ(*eta_seconds(10, 10, 7.0), 0.0);
  EXPECT_DOUBLE_EQ(*eta_seconds(12, 10, 7.0), 0.0);   // over-counted callers never get a negative ETA
  EXPECT_FALSE(eta_seconds(1, 0, 1.0).has_value());
  EXPECT_FALSE(eta_seconds(1, 5, -1.0).has_value());
}

TEST(Progress, DurationsAreShort) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(7.4), "7s");
  EXPECT_EQ(format_duration(59.6), "1:00");
  EXPECT_EQ(format_duration(65), "1:05");
  EXPECT_EQ(format_duration(3599), "59:59");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(1.0 / 0.0), "?");
}

TEST(Progress, LineHasItemCountsElapsedAndEta) {
  const std::string s = format_progress("cpu:openblas qkv 256x2304x768", 3, 12, 12.0, 200);
  EXPECT_EQ(s, "[ 3/12]  25% cpu:openblas qkv 256x2304x768 | elapsed 12s | ETA 36s");
  EXPECT_EQ(format_progress("x", 0, 5, 1.0, 200), "[0/5]   0% x | elapsed 1s | ETA ?");
}

TEST(Progress, LongItemIsCutFromTheFrontToFitTheWidth) {
  const std::string item(80, 'a');
  const std::string s = format_progress(item + "TAIL", 1, 2, 1.0, 60);
  EXPECT_EQ(s.size(), 60u) << s;
  EXPECT_NE(s.find("~"), std::string::npos);
  EXPECT_NE(s.find("TAIL | elapsed"), std::string::npos) << s;  // the end of the item, the part that changes
  EXPECT_NE(s.find("ETA 1s"), std::string::npos);
}

TEST(Progress, DisabledWritesNothingEnabledRedrawsInPlace) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Progress off(false, f);
    off.update("item", 1, 2);
    off.status("waiting");
    off.clear();
  }
  EXPECT_EQ(std::ftell(f), 0L);
  {
    Progress on(true, f);
    on.update("item", 1, 2);
    on.clear();
  }
  std::rewind(f);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  const std::string out(buf, n);
  std::fclose(f);
  EXPECT_EQ(out.rfind("\r[1/2]  50% item", 0), 0u) << out;
  EXPECT_NE(out.find("\033[K"), std::string::npos);  // the tail of a longer previous line is erased
  EXPECT_EQ(out.find('\n'), std::string::npos);      // never scrolls the terminal
}

TEST(Progress, AutoFollowsWhetherStdoutAndStderrAreTerminals) {
  // Under ctest and CI both are redirected, which is exactly the case that must stay clean.
  Progress p;
  EXPECT_EQ(p.enabled(), isatty(STDOUT_FILENO) && isatty(STDERR_FILENO));
}

}  // namespace
}  // namespace flopwatt
