#include <libpq-fe.h>

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

class PgDb : public Db {
 public:
  explicit PgDb(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (!conn_) throw DbError("libpq: out of memory", true);
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string msg = trim(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw DbError(msg, true);
    }
    // Notices (an IF NOT EXISTS that found the table) are not the user's business.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  }
  ~PgDb() override { PQfinish(conn_); }

  void exec(const std::string& sql) override {
    PGresult* r = PQexec(conn_, sql.c_str());
    check(r);
    PQclear(r);
  }

  void each(const std::string& sql, const std::vector<Value>& params,
            const std::function<void(const Row&)>& row) override {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    // Parameters as text, their types inferred by the server from the statement.
    PGresult* r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    check(r);
    struct Clear {
      PGresult* r;
      ~Clear() { PQclear(r); }
    } clear{r};
    const int n = PQntuples(r), cols = PQnfields(r);
    Row out(static_cast<std::size_t>(cols));
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
  }

  bool sqlite() const override { return false; }

 private:
  void check(PGresult* r) {
    const auto st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    const std::string msg = trim(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    PQclear(r);
    throw DbError(msg.empty() ? trim(PQerrorMessage(conn_)) : msg, PQstatus(conn_) != CONNECTION_OK);
  }

  PGconn* conn_;
};

}  // namespace

std::unique_ptr<Db> open_postgres(const std::string& conninfo) { return std::make_unique<PgDb>(conninfo); }

}  // namespace flopwatt::store
