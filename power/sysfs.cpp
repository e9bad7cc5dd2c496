#include "power/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "power/clock.h"

namespace flopwatt::power {

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string under_root(const std::string& root, const std::string& abs_path) {
  if (root.empty() || root == "/") return abs_path;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return abs_path.empty() || abs_path[0] != '/' ? r + "/" + abs_path : r + abs_path;
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

TextRead read_text(const std::string& path) {
  TextRead r;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.err = errno;
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.err = errno;
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    r.text.append(buf, std::size_t(n));
    if (r.text.size() > (1u << 20)) break;  // attribute files are tiny; stop on anything else
  }
  ::close(fd);
  r.ok = true;
  return r;
}

static std::string trim(std::string s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::optional<std::string> read_trimmed(const std::string& path, int* err) {
  TextRead r = read_text(path);
  if (err) *err = r.err;
  if (!r.ok) return std::nullopt;
  return trim(std::move(r.text));
}

std::optional<std::int64_t> read_int(const std::string& path, int* err) {
  auto t = read_trimmed(path, err);
  if (!t || t->empty()) {
    if (t && err) *err = EINVAL;
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t->c_str(), &end, 0);
  if (errno || *end) {
    if (err) *err = EINVAL;
    return std::nullopt;
  }
  return std::int64_t(v);
}

std::optional<double> read_double(const std::string& path, int* err) {
  auto t = read_trimmed(path, err);
  if (!t || t->empty()) {
    if (t && err) *err = EINVAL;
    return std::nullopt;
  }
  char* end = nullptr;
  const double v = std::strtod(t->c_str(), &end);
  if (end == t->c_str() || *end) {
    if (err) *err = EINVAL;
    return std::nullopt;
  }
  return v;
}

static bool read_small(const char* path, char* buf, std::size_t cap, std::size_t& len, int& err) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return false;
  }
  ssize_t n;
  do n = ::read(fd, buf, cap - 1);
  while (n < 0 && errno == EINTR);
  if (n < 0) err = errno;
  ::close(fd);
  if (n < 0) return false;
  len = std::size_t(n);
  buf[len] = 0;
  return true;
}

bool read_u64_file(const char* path, std::uint64_t& value, int& err) {
  char buf[64];
  std::size_t len = 0;
  if (!read_small(path, buf, sizeof buf, len, err)) return false;
  std::size_t i = 0;
  while (i < len && std::isspace(static_cast<unsigned char>(buf[i]))) ++i;
  if (i == len || !std::isdigit(static_cast<unsigned char>(buf[i]))) {
    err = EINVAL;  // empty (a writer truncated it mid-update) or not a number
    return false;
  }
  std::uint64_t v = 0;
  for (; i < len && std::isdigit(static_cast<unsigned char>(buf[i])); ++i) {
    const std::uint64_t d = std::uint64_t(buf[i] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      err = ERANGE;  // no counter has 20 digits: corrupt, not a reading
      return false;
    }
    v = v * 10 + d;
  }
  // A sysfs attribute is the number and a newline; anything else after the
  // digits ("123abc") is not a value to trust.
  while (i < len && std::isspace(static_cast<unsigned char>(buf[i]))) ++i;
  if (i != len) {
    err = EINVAL;
    return false;
  }
  value = v;
  err = 0;
  return true;
}

bool read_i64_file(const char* path, std::int64_t& value, int& err) {
  char buf[64];
  std::size_t len = 0;
  if (!read_small(path, buf, sizeof buf, len, err)) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(buf, &end, 10);
  if (end == buf || errno) {
    err = errno ? errno : EINVAL;
    return false;
  }
  while (end < buf + len && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (end != buf + len) {
    err = EINVAL;  // trailing garbage ("123abc")
    return false;
  }
  value = v;
  err = 0;
  return true;
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const unsigned long long x = std::strtoull(a.substr(i, i2 - i).c_str(), nullptr, 10);
      const unsigned long long y = std::strtoull(b.substr(j, j2 - j).c_str(), nullptr, 10);
      if (x != y) return x < y;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> v;
  DIR* d = ::opendir(path.c_str());
  if (!d) return v;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    v.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(v.begin(), v.end(), natural_less);
  return v;
}

std::string errno_text(int err) {
  const char* name = nullptr;
  switch (err) {
    case EACCES: name = "EACCES"; break;
    case EPERM: name = "EPERM"; break;
    case ENOENT: name = "ENOENT"; break;
    case EIO: name = "EIO"; break;
    case EINVAL: name = "EINVAL"; break;
    case ENODEV: name = "ENODEV"; break;
    case ENXIO: name = "ENXIO"; break;
    case EOPNOTSUPP: name = "EOPNOTSUPP"; break;
    case EBUSY: name = "EBUSY"; break;
    case EAGAIN: name = "EAGAIN"; break;
    default: break;
  }
  std::string s = name ? name : "errno " + std::to_string(err);
  return s + " (" + std::strerror(err) + ")";
}

}  // namespace flopwatt::power
