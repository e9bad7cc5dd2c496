#include "harness/output/safe_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "workloads/error.h"

namespace fs = std::filesystem;

namespace flopwatt {

namespace {

std::string err() { return std::strerror(errno); }

// mkdir -p where only the directories made here get 0755 (chmod: the umask may
// have narrowed or, at 000, widened mkdir's mode); existing ones are left as they are.
bool make_parents(const fs::path& p) {
  fs::path cur;
  for (const auto& part : p) {
    cur /= part;
    if (::mkdir(cur.c_str(), kDirMode) == 0) {
      ::chmod(cur.c_str(), kDirMode);
    } else if (errno != EEXIST) {
      return false;
    }
  }
  return true;
}

std::string random_suffix() {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char b[8];
  if (getrandom(b, sizeof b, 0) != ssize_t(sizeof b))
    for (auto& x : b) x = static_cast<unsigned char>(std::rand());
  std::string s;
  for (unsigned char x : b) s += kAlphabet[x % (sizeof kAlphabet - 1)];
  return s;
}

// A name for a file the caller must not mistake for a real output, and which
// no one can have planted: creation is exclusive and retried on a collision.
int create_temp(int dirfd, const std::string& name, std::string& tmp_name) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp_name = "." + name + "." + random_suffix() + ".tmp";
    const int fd = ::openat(dirfd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kFileMode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

OutputDir::OutputDir(const std::string& path, std::string flag) : path_(path), flag_(std::move(flag)) {
  const std::string at = flag_ + " " + path;
  if (path.empty()) throw InputError(flag_, "empty path", "pass a directory");
  const fs::path p(path);
  fs::path last = p.filename();
  fs::path parent = p.parent_path();
  if (last.empty()) {  // "dir/": the name before the slash
    last = parent.filename();
    parent = parent.parent_path();
  }
  if (!parent.empty() && !make_parents(parent))
    throw InputError(at, "cannot create the parent directory (" + err() + ")", "pass a writable directory");
  const int pfd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (pfd < 0) throw InputError(at, "cannot open the parent directory (" + err() + ")", "pass a writable directory");
  if (::mkdirat(pfd, last.c_str(), kDirMode) == 0) {
    ::fchmodat(pfd, last.c_str(), kDirMode, 0);
  } else if (errno != EEXIST) {
    const std::string why = err();
    ::close(pfd);
    throw InputError(at, "cannot create the directory (" + why + ")", "pass a writable directory");
  }
  fd_ = ::openat(pfd, last.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int open_errno = errno;
  ::close(pfd);
  if (fd_ < 0) {
    errno = open_errno;
    if (errno == ELOOP || errno == ENOTDIR)
      throw InputError(at, "is not a directory (a file or a symbolic link)",
                       "pass a real directory; links are refused so a planted one cannot redirect the output");
    throw InputError(at, "cannot open the directory (" + err() + ")", "pass a writable directory");
  }
  if (::faccessat(fd_, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw InputError(at, "directory is not writable", "pass a writable directory");
  }
}

OutputDir OutputDir::parent_of(const std::string& file, std::string flag) {
  const fs::path p(file);
  const std::string at = flag + " " + file;
  if (file.empty() || p.filename().empty() || p.filename() == "." || p.filename() == "..")
    throw InputError(at, "not a file name", "pass a path to a file");
  const fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw InputError(at, "cannot open the directory " + parent.string() + " (" + err() + ")",
                               "create the directory first or pass another path");
  if (::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    ::close(fd);
    throw InputError(at, "directory " + parent.string() + " is not writable", "pass a path in a writable directory");
  }
  struct stat st {};
  if (::fstatat(fd, p.filename().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(at, "is a directory", "pass a path to a file");
  }
  return OutputDir(fd, parent.string(), std::move(flag));
}

OutputDir::OutputDir(OutputDir&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), flag_(std::move(o.flag_)) {
  o.fd_ = -1;
}

OutputDir::~OutputDir() {
  if (fd_ >= 0) ::close(fd_);
}

std::string OutputDir::where(const std::string& name) const {
  return flag_ + " " + (fs::path(path_) / name).string();
}

bool OutputDir::holds_any(std::initializer_list<const char*> names) const {
  struct stat st {};
  for (const char* n : names)
    if (::fstatat(fd_, n, &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  return false;
}

void OutputDir::remove(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT)
      throw InputError(where(name), "cannot remove the previous run's file (" + err() + ")", "remove it by hand");
    return;
  }
  const int sub = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0) throw InputError(where(name), "cannot open (" + err() + ")", "remove it by hand");
  DIR* d = ::fdopendir(sub);
  if (!d) {
    ::close(sub);
    throw InputError(where(name), "cannot list (" + err() + ")", "remove it by hand");
  }
  while (const dirent* e = ::readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat es {};
    if (::fstatat(sub, e->d_name, &es, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(es.st_mode)) ::unlinkat(sub, e->d_name, 0);
  }
  ::closedir(d);
  if (::unlinkat(fd_, name.c_str(), AT_REMOVEDIR) != 0)
    throw InputError(where(name), "cannot remove the previous run's directory (" + err() + ")", "remove it by hand");
}

void OutputDir::replace(const std::string& name, const std::function<void(const ByteSink&)>& produce) const {
  std::string tmp;
  const int fd = create_temp(fd_, name, tmp);
  if (fd < 0) throw InputError(where(name), "cannot create a file (" + err() + ")", "check the directory's permissions");
  bool ok = ::fchmod(fd, kFileMode) == 0;
  int saved = ok ? 0 : errno;
  try {
    if (ok)
      produce([&](const void* data, std::size_t n) {
        if (ok && !write_all(fd, data, n)) ok = false, saved = errno;
      });
  } catch (...) {
    ::close(fd);
    ::unlinkat(fd_, tmp.c_str(), 0);
    throw;
  }
  if (::close(fd) != 0 && ok) ok = false, saved = errno;
  if (ok && ::renameat(fd_, tmp.c_str(), fd_, name.c_str()) != 0) ok = false, saved = errno;
  if (!ok) {
    ::unlinkat(fd_, tmp.c_str(), 0);
    throw InputError(where(name), std::string("write failed (") + std::strerror(saved) + ")",
                     "free space in the directory or pass another one");
  }
}

void OutputDir::replace(const std::string& name, std::string_view text) const {
  replace(name, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
}

int OutputDir::create_fresh(const std::string& name) const {
  if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT && errno != EISDIR)
    throw InputError(where(name), "cannot replace the existing file (" + err() + ")", "remove it by hand");
  const int fd = ::openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, kFileMode);
  if (fd < 0) throw InputError(where(name), "cannot create the file (" + err() + ")", "check the directory's permissions");
  ::fchmod(fd, kFileMode);
  return fd;
}

}  // namespace flopwatt
