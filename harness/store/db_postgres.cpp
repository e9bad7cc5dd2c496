#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "harness/store/conninfo.h"
#include "harness/store/db.h"

namespace flopwatt::store {

namespace {

// libpq's messages span lines ("...\n\tIs the server running..."): one line, for a one-line error.
std::string trim(const std::string& in) {
  std::string s;
  for (char c : in) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c == ' ' && (s.empty() || s.back() == ' ')) continue;
    s += c;
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

using Clock = std::chrono::steady_clock;

// SQLSTATE classes the user can act on (PostgreSQL's errcodes.txt).
DbErrorKind kind_of(const char* sqlstate) {
  const std::string c = sqlstate ? sqlstate : "";
  if (c == "42501") return DbErrorKind::kPrivilege;  // insufficient_privilege
  if (c == "53100") return DbErrorKind::kFull;       // disk_full
  if (c == "25006") return DbErrorKind::kReadOnly;   // read_only_sql_transaction
  if (c == "55P03" || c == "40P01") return DbErrorKind::kBusy;  // lock_not_available, deadlock_detected
  return DbErrorKind::kOther;
}

// libpq's connect_timeout when neither the connection string nor
// PGCONNECT_TIMEOUT sets one (libpq's own default is to wait forever).
constexpr const char* kConnectTimeoutS = "10";
// The server ends a statement after this long (statement_timeout, unless the
// connection string's options set another), and the client stops waiting a
// little after: a server that accepts and then never answers ends the command.
constexpr int kStatementTimeoutS = 60;

class PgDb : public Db {
 public:
  PgDb(const std::string& conninfo, const std::atomic<bool>* stop) : stop_(stop), password_(password_of(conninfo)) {
    // Defaults first: expand_dbname makes the string's own keywords (and
    // later ones) override them, as a user's connect_timeout=30 must.
    std::vector<const char*> keys, values;
    const char* env = std::getenv("PGCONNECT_TIMEOUT");
    if (!env || !*env) {
      keys.push_back("connect_timeout");
      values.push_back(kConnectTimeoutS);
    }
    const std::string options = fmt::format("-c statement_timeout={}s", kStatementTimeoutS);
    keys.push_back("options");
    values.push_back(options.c_str());
    keys.push_back("dbname");
    values.push_back(conninfo.c_str());
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectStartParams(keys.data(), values.data(), 1);
    if (!conn_) throw DbError("libpq: out of memory", true);
    try {
      connect();
    } catch (...) {
      PQfinish(conn_);
      conn_ = nullptr;
      throw;
    }
    // Notices (an IF NOT EXISTS that found the table) are not the user's business.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgDb() override { PQfinish(conn_); }

  void exec(const std::string& sql) override {
    if (!PQsendQuery(conn_, sql.c_str())) fail(PQerrorMessage(conn_));
    drain([](PGresult*) {});
  }

  void each(const std::string& sql, const std::vector<Value>& params,
            const std::function<void(const Row&)>& row) override {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    // Parameters as text, their types inferred by the server from the statement.
    if (!PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                           nullptr, 0))
      fail(PQerrorMessage(conn_));
    Row out;
    drain([&](PGresult* r) {
      const int n = PQntuples(r), cols = PQnfields(r);
      out.resize(static_cast<std::size_t>(cols));
      for (int i = 0; i < n; ++i) {
        for (int c = 0; c < cols; ++c) {
          Value& v = out[static_cast<std::size_t>(c)];
          const auto len = static_cast<std::size_t>(PQgetlength(r, i, c));
          if (PQgetisnull(r, i, c)) v.reset();
          else if (v) v->assign(PQgetvalue(r, i, c), len);  // keeps the string's buffer from the last row
          else v.emplace(PQgetvalue(r, i, c), len);
        }
        row(out);
      }
    });
  }

  bool sqlite() const override { return false; }

 private:
  // Waits for the socket in short slices: a stop request (SIGINT/SIGTERM
  // during a run's recording) or the deadline ends the wait within 100 ms.
  void wait(bool for_write, Clock::time_point deadline, const char* what) {
    for (;;) {
      if (stop_ && stop_->load()) throw DbError("interrupted while " + std::string(what), true);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) throw DbError(fmt::format("no answer from the server while {}", what), true);
      if (PQsocket(conn_) < 0) return;  // between hosts: libpq opens the next socket on its next poll
      pollfd p{PQsocket(conn_), static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
      const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
      if (rc > 0) return;
      if (rc < 0 && errno != EINTR) throw DbError(std::string("poll: ") + std::strerror(errno), true);
    }
  }

  void connect() {
    if (PQstatus(conn_) == CONNECTION_BAD) fail(PQerrorMessage(conn_));
    int timeout_s = 0;
    if (PQconninfoOption* o = PQconninfo(conn_)) {
      for (PQconninfoOption* i = o; i->keyword; ++i)
        if (std::string(i->keyword) == "connect_timeout" && i->val) timeout_s = std::atoi(i->val);
      PQconninfoFree(o);
    }
    if (timeout_s <= 0) timeout_s = 24 * 3600;  // "0": the user asked to wait; a signal still ends it
    timeout_s = std::max(timeout_s, 2);          // libpq's own floor
    const std::string what = fmt::format("connecting (connect_timeout {} s; set connect_timeout= in the connection "
                                         "string for another)", timeout_s);
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    for (PostgresPollingStatusType st = PGRES_POLLING_WRITING;;) {
      if (st == PGRES_POLLING_OK) return;
      if (st == PGRES_POLLING_FAILED) fail(PQerrorMessage(conn_));
      wait(st == PGRES_POLLING_WRITING, deadline, what.c_str());
      st = PQconnectPoll(conn_);
    }
  }

  // Reads every result of the statement sent, calling `use` on each that
  // succeeded; the first error is thrown after the connection is drained.
  template <class F>
  void drain(F&& use) {
    const auto deadline = Clock::now() + std::chrono::seconds(kStatementTimeoutS + 5);
    while (PQflush(conn_) == 1) wait(true, deadline, "sending a statement");
    std::string error;
    DbErrorKind kind = DbErrorKind::kOther;
    for (;;) {
      while (PQisBusy(conn_)) {
        wait(false, deadline, "waiting for a statement's result");
        if (!PQconsumeInput(conn_)) fail(PQerrorMessage(conn_));
      }
      PGresult* r = PQgetResult(conn_);
      if (!r) break;
      const auto st = PQresultStatus(r);
      if (error.empty() && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        error = PQresultErrorMessage(r);
        if (error.empty()) error = PQerrorMessage(conn_);
        if (error.empty()) error = PQresStatus(st);
        kind = kind_of(PQresultErrorField(r, PG_DIAG_SQLSTATE));
      }
      if (error.empty()) {
        try {
          use(r);
        } catch (...) {
          PQclear(r);
          while (PGresult* rest = PQgetResult(conn_)) PQclear(rest);
          throw;
        }
      }
      PQclear(r);
    }
    if (!error.empty()) fail(error, kind);
  }

  [[noreturn]] void fail(const std::string& msg, DbErrorKind kind = DbErrorKind::kOther) {
    throw DbError(scrub(trim(msg), password_), PQstatus(conn_) != CONNECTION_OK ? DbErrorKind::kLost : kind);
  }

  const std::atomic<bool>* stop_;
  std::string password_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<Db> open_postgres(const std::string& conninfo, const std::atomic<bool>* stop) {
  return std::make_unique<PgDb>(conninfo, stop);
}

}  // namespace flopwatt::store
