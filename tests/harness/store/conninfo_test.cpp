// Store specs as libpq parses them: every form a password can take is
// removed, other schemes are refused, and a path holding '=' stays a path.
#include <gtest/gtest.h>

#include "harness/store/conninfo.h"

using flopwatt::store::classify_spec;
using flopwatt::store::masked;
using flopwatt::store::password_of;
using flopwatt::store::scrub;
using flopwatt::store::SpecKind;

namespace {

// Every form libpq accepts a password in (fe-connect.c: conninfo_parse's
// optional spaces around '=', quoted values with backslash escapes;
// conninfo_uri_parse_options' userinfo and percent-decoded query keys).
const char* const kForms[] = {
    "host=/s password=s3cr3t dbname=x",
    "host=/s password = s3cr3t dbname=x",
    "host=/s  password=  's3cr3t' dbname=x",
    "host=/s password='s3\\'cr3t' dbname=x",
    "postgresql://fw:s3cr3t@localhost/db",
    "postgres://fw:s3cr3t@localhost:5433/db?sslmode=require",
    "postgresql://fw@localhost/db?password=s3cr3t",
    "postgresql://fw@localhost/db?p%61ssword=s3cr3t&sslmode=disable",
    "postgresql://fw@localhost/db?sslmode=disable&password=s3cr3t",
    "postgresql://fw:s3cr3t@/db?host=/tmp/sock",
    "postgresql://fw:s3%63r3t@localhost/db",
};

}  // namespace

TEST(Conninfo, EveryPasswordFormIsRemoved) {
  for (const char* f : kForms) {
    SCOPED_TRACE(f);
    EXPECT_EQ(classify_spec(f).kind, SpecKind::kPostgres);
    EXPECT_FALSE(password_of(f).empty());
    const std::string m = masked(f);
    EXPECT_EQ(m.find("s3"), std::string::npos) << m;
    EXPECT_EQ(m.find("cr3t"), std::string::npos) << m;
    // What is left is still a connection string libpq takes, without a password.
    EXPECT_EQ(classify_spec(m).kind, SpecKind::kPostgres) << m;
    EXPECT_EQ(password_of(m), "") << m;
  }
  // The rest of it is kept.
  EXPECT_EQ(masked("postgresql://fw:s3cr3t@localhost/db?sslmode=disable"), "postgresql://fw@localhost/db?sslmode=disable");
  EXPECT_EQ(masked("host=/s password = s3cr3t dbname=x"), "dbname=x host=/s");
  // A string of nothing but a password is nothing once it is removed.
  EXPECT_EQ(masked("password=s3cr3t"), "");
  // Without a password a spec is shown as it was given.
  EXPECT_EQ(masked("host=/s  dbname=x"), "host=/s  dbname=x");
  EXPECT_EQ(masked("/data/results.sqlite3"), "/data/results.sqlite3");
}

TEST(Conninfo, OtherSchemesAndRefusedStringsAreNeverFiles) {
  for (const char* s : {"postgressql://fw:s3cr3t@host/db", "mysql://fw:s3cr3t@host/db", "x://y", "sqlite:///tmp/a",
                        "postgresql://host/db?nosuchparam=1", "hots=/s dbname=x", "k=v.sqlite3"}) {
    SCOPED_TRACE(s);
    const auto c = classify_spec(s);
    EXPECT_EQ(c.kind, SpecKind::kRefused);
    EXPECT_FALSE(c.why.empty());
    EXPECT_EQ(c.why.find("s3cr3t"), std::string::npos) << c.why;
    EXPECT_EQ(masked(s).find("s3cr3t"), std::string::npos) << masked(s);
  }
}

TEST(Conninfo, PathsHoldingEqualsStayPaths) {
  for (const char* s : {"/data/a=b/results.sqlite3", "./k=v.sqlite3", "rel dir/x=y.db", "/x/y=z", "results.sqlite3"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(classify_spec(s).kind, SpecKind::kFile);
    EXPECT_EQ(masked(s), s);
  }
  EXPECT_EQ(classify_spec("host=/run/postgresql dbname=flopwatt").kind, SpecKind::kPostgres);
  EXPECT_EQ(classify_spec("service=lab").kind, SpecKind::kPostgres);
}

TEST(Conninfo, ScrubRemovesEveryOccurrence) {
  EXPECT_EQ(scrub("auth failed for pw s3cr3t (s3cr3t)", "s3cr3t"), "auth failed for pw *** (***)");
  EXPECT_EQ(scrub("nothing here", ""), "nothing here");
}
