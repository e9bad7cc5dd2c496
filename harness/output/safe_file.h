// Writing into a directory another user may also write to (a shared results
// folder, /tmp) without ever following a link planted there: the directory is
// opened once and every file in it is created relative to that descriptor with
// O_CREAT | O_EXCL | O_NOFOLLOW, replaced through a randomly named temporary
// that is renamed over the target, and given an explicit mode whatever the
// umask. A failed write removes its temporary.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace flopwatt {

inline constexpr unsigned kFileMode = 0644;
inline constexpr unsigned kDirMode = 0755;

// Receives the bytes of a file being written, in as many pieces as the producer likes.
using ByteSink = std::function<void(const void* data, std::size_t n)>;

class OutputDir {
 public:
  // Creates `path` and missing parents (0755) and opens it without following a
  // symlink in its last component. `flag` (e.g. "--out") names the option in
  // errors, which are InputErrors.
  OutputDir(const std::string& path, std::string flag);
  // Opens the directory that holds an existing or future file `file` (its
  // parent must exist), for writing `file` through replace().
  static OutputDir parent_of(const std::string& file, std::string flag);
  OutputDir(OutputDir&& o) noexcept;
  OutputDir& operator=(OutputDir&&) = delete;
  OutputDir(const OutputDir&) = delete;
  ~OutputDir();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // True when the directory holds one of `names` (any kind of entry, a symlink too).
  bool holds_any(std::initializer_list<const char*> names) const;
  // Unlinks `name` when it is a file or a symlink (never what a link points to);
  // a directory of that name is emptied of files and removed. Absent is fine.
  void remove(const std::string& name) const;

  // Writes `name` atomically: a fresh temporary in this directory receives the
  // bytes, gets mode 0644 and is renamed over `name` (which,
  // if a symlink, is replaced, never written through). On any failure the
  // temporary is removed and an InputError names `name` and the flag.
  void replace(const std::string& name, const std::function<void(const ByteSink&)>& produce) const;
  void replace(const std::string& name, std::string_view text) const;

  // Creates `name` empty for appending, mode 0644; an existing entry of that
  // name (a planted link too) is unlinked first, and the creation refuses to
  // follow one that appears meanwhile. Returns the descriptor (caller closes).
  int create_fresh(const std::string& name) const;

 private:
  OutputDir(int fd, std::string path, std::string flag) : fd_(fd), path_(std::move(path)), flag_(std::move(flag)) {}
  std::string where(const std::string& name) const;
  int fd_ = -1;
  std::string path_, flag_;
};

// write(2) until done, retrying on EINTR; false on error (errno set).
bool write_all(int fd, const void* data, std::size_t n);

}  // namespace flopwatt
