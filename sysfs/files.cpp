#include "sysfs/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace flopwatt::sysfs {

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

namespace {
std::atomic<const Overlay*> g_overlay{nullptr};
}  // namespace

void set_overlay(const Overlay* o) { g_overlay.store(o, std::memory_order_release); }
const Overlay* overlay() { return g_overlay.load(std::memory_order_acquire); }

TextRead read_text(const std::string& path) {
  TextRead r;
  if (const Overlay* o = overlay(); o && o->read(path, r.text)) {
    r.ok = true;
    return r;
  }
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
  const long long v = std::strtoll(t->c_str(), &end, 10);
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
  // Allocates only while an overlay is installed (a replay); a machine's hot
  // path reads the file without.
  if (const Overlay* o = overlay()) {
    std::string text;
    if (o->read(path, text)) {
      len = std::min(text.size(), cap - 1);
      std::memcpy(buf, text.data(), len);
      buf[len] = 0;
      return true;
    }
  }
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

std::optional<std::string> link_target_name(const std::string& path) {
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string t(buf, std::size_t(n));
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  const auto slash = t.rfind('/');
  return slash == std::string::npos ? t : t.substr(slash + 1);
}

std::optional<std::uint64_t> parse_hex_0x(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s.size() > 18) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s.substr(2)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | std::uint64_t(d);
  }
  return v;
}

namespace {

std::string_view trim_view(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

// The value after "key<spaces>:" on the first line of `text` with that key.
std::optional<std::string_view> colon_value(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && trim_view(line.substr(0, colon)) == key) return trim_view(line.substr(colon + 1));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> cpuinfo_field(const std::string& root, std::string_view key) {
  const TextRead r = read_text(under_root(root, "/proc/cpuinfo"));
  if (!r.ok) return std::nullopt;
  const auto v = colon_value(r.text, key);
  return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}

std::optional<std::uint64_t> meminfo_bytes(const std::string& root, std::string_view key) {
  const TextRead r = read_text(under_root(root, "/proc/meminfo"));
  if (!r.ok) return std::nullopt;
  const auto v = colon_value(r.text, key);
  if (!v || v->size() < 3 || v->substr(v->size() - 3) != " kB") return std::nullopt;
  const auto kib = parse_decimal(trim_view(v->substr(0, v->size() - 3)));
  if (!kib || *kib > UINT64_MAX / 1024) return std::nullopt;
  return *kib * 1024;
}

std::optional<std::uint64_t> parse_decimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = std::uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0;;) {
    const std::size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) return out;
    pos = next + 1;
  }
}

// An event term's value as the kernel writes it in events/<name>: "0x0a", or
// decimal in hand-written specs.
std::optional<std::uint64_t> parse_term_value(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::uint64_t v = 0;
    for (const char c : s.substr(2)) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0 || v >> 60) return std::nullopt;
      v = v << 4 | std::uint64_t(d);
    }
    return v;
  }
  return parse_decimal(s);
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view s) {
  std::vector<int> out;
  if (s.empty()) return out;
  for (const auto part : split(s, ',')) {
    const auto dash = part.find('-');
    const auto lo = parse_decimal(part.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : parse_decimal(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > 65535) return std::nullopt;
    for (auto c = *lo; c <= *hi; ++c) out.push_back(int(c));
  }
  return out;
}

Pmu read_pmu(const std::string& root, const std::string& name) {
  Pmu p;
  p.name = name;
  p.dir = under_root(root, "/sys/bus/event_source/devices/" + name);
  if (!is_directory(p.dir)) return p;
  p.present = true;
  const std::string type_file = join_path(p.dir, "type");
  const auto type = read_trimmed(type_file);
  const auto type_value = type ? parse_decimal(*type) : std::nullopt;
  if (!type_value || *type_value > UINT32_MAX) {
    p.problem = type ? type_file + ": type '" + *type + "' is not a decimal number"
                     : "cannot read " + type_file;
    return p;
  }
  p.type = std::uint32_t(*type_value);
  const std::string mask_file = join_path(p.dir, "cpumask");
  if (const auto mask = read_trimmed(mask_file)) {
    const auto cpus = parse_cpu_list(*mask);
    if (!cpus) {
      p.problem = mask_file + ": cpumask '" + *mask + "' is not a CPU list";
      return p;
    }
    p.cpus = *cpus;
  }
  const std::string format_dir = join_path(p.dir, "format");
  for (const auto& f : list_dir(format_dir))
    if (auto v = read_trimmed(join_path(format_dir, f))) p.formats[f] = *v;
  return p;
}

std::optional<PmuEvent> read_pmu_event(const Pmu& pmu, const std::string& name) {
  const std::string file = join_path(join_path(pmu.dir, "events"), name);
  auto spec = read_trimmed(file);
  if (!spec) return std::nullopt;
  PmuEvent e;
  e.name = name;
  e.spec = *spec;
  if (auto s = read_trimmed(file + ".scale")) {
    char* end = nullptr;
    const double v = std::strtod(s->c_str(), &end);
    if (s->empty() || *end) e.problem = file + ".scale: scale '" + *s + "' is not a number";
    else e.scale = v;
  }
  if (auto u = read_trimmed(file + ".unit")) e.unit = *u;
  return e;
}

std::vector<std::string> pmu_event_names(const Pmu& pmu) {
  std::vector<std::string> out;
  for (auto& f : list_dir(join_path(pmu.dir, "events")))
    if (f.find('.') == std::string::npos) out.push_back(std::move(f));
  return out;
}

bool encode_terms(const std::string& terms, const Pmu& pmu, PerfConfig& out, std::string& problem) {
  for (const auto term : split(terms, ',')) {
    if (term.empty()) continue;
    const auto eq = term.find('=');
    const std::string key(term.substr(0, eq));
    const auto value = eq == std::string_view::npos ? std::optional<std::uint64_t>(1) : parse_term_value(term.substr(eq + 1));
    if (!value) {
      problem = "term '" + std::string(term) + "' has no number after '='";
      return false;
    }
    std::string format;
    if (auto f = pmu.formats.find(key); f != pmu.formats.end()) format = f->second;
    else if (key == "event" && pmu.formats.empty()) format = "config:0-7";
    else {
      problem = join_path(join_path(pmu.dir, "format"), key) + " missing: " + pmu.name + " has no term '" + key + "'";
      return false;
    }
    const auto colon = format.find(':');
    const std::string field = format.substr(0, colon == std::string::npos ? 0 : colon);
    std::uint64_t* target = field == "config" ? &out.config : field == "config1" ? &out.config1
                            : field == "config2" ? &out.config2 : nullptr;
    if (!target) {
      problem = "format of term '" + key + "' is '" + format + "', not config, config1 or config2 and bits";
      return false;
    }
    int used = 0;
    for (const auto range : split(std::string_view(format).substr(colon + 1), ',')) {
      const auto dash = range.find('-');
      const auto lo = parse_decimal(range.substr(0, dash));
      const auto hi = dash == std::string_view::npos ? lo : parse_decimal(range.substr(dash + 1));
      if (!lo || !hi || *hi < *lo || *hi > 63) {
        problem = "format of term '" + key + "': bit range '" + std::string(range) + "' is not N or N-M within 0-63";
        return false;
      }
      for (std::uint64_t bit = *lo; bit <= *hi; ++bit, ++used)
        if (used < 64 && (*value >> used) & 1u) *target |= std::uint64_t(1) << bit;
    }
    if (used < 64 && (*value >> used) != 0) {
      problem = "value " + std::to_string(*value) + " of term '" + key + "' does not fit the " + std::to_string(used) +
                " bits of '" + format + "'";
      return false;
    }
  }
  return true;
}

std::optional<std::size_t> parse_cache_size(std::string_view s) {
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  const auto v = parse_decimal(s.substr(0, digits));
  const std::string_view unit = s.substr(digits);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  // 2^40 of anything is no CPU cache: a corrupt file, and shifting it would overflow.
  if (!v || shift < 0 || *v > (std::uint64_t(1) << 40)) return std::nullopt;
  return std::size_t(*v) << shift;
}

std::vector<Cache> cpu0_caches(const std::string& root, std::string* problem) {
  std::vector<Cache> out;
  const std::string dir = under_root(root, "/sys/devices/system/cpu/cpu0/cache");
  auto note = [&](const std::string& what) {
    if (problem && problem->empty()) *problem = what;
  };
  for (const auto& index : list_dir(dir)) {
    if (index.rfind("index", 0) != 0) continue;
    const std::string d = join_path(dir, index);
    Cache c;
    const auto level = read_trimmed(join_path(d, "level"));
    const auto level_value = level ? parse_decimal(*level) : std::nullopt;
    if (!level_value || *level_value < 1 || *level_value > 16) {
      note(join_path(d, "level") + (level ? ": level '" + *level + "' is not a cache level" : ": cannot read"));
      continue;
    }
    c.level = int(*level_value);
    const auto type = read_trimmed(join_path(d, "type"));
    if (!type || type->empty()) {
      note(join_path(d, "type") + ": cannot read");
      continue;
    }
    c.type = *type;
    const auto size = read_trimmed(join_path(d, "size"));
    const auto bytes = size ? parse_cache_size(*size) : std::nullopt;
    if (!bytes || *bytes == 0) {
      note(join_path(d, "size") + (size ? ": size '" + *size + "' is not a cache size" : ": cannot read"));
      continue;
    }
    c.bytes = *bytes;
    if (const auto shared = read_trimmed(join_path(d, "shared_cpu_list"))) {
      const auto cpus = parse_cpu_list(*shared);
      // Who shares a cache only refines its use; the cache itself is still known.
      if (cpus) c.shared_cpus = *cpus;
      else note(join_path(d, "shared_cpu_list") + ": '" + *shared + "' is not a CPU list");
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace flopwatt::sysfs
