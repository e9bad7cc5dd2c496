// A throw-away directory tree standing in for /sys, /dev and /proc.
#pragma once
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

namespace flopwatt::power::testing {

class FixtureTree {
 public:
  FixtureTree() {
    char tmpl[] = "/tmp/flopwatt-power-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~FixtureTree() {
    nftw(root_.c_str(), [](const char* p, const struct stat*, int, FTW*) { return ::remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
  }
  FixtureTree(const FixtureTree&) = delete;
  FixtureTree& operator=(const FixtureTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  void mkdirs(const std::string& rel) const {
    std::string p = root_;
    std::size_t i = 0;
    while (i < rel.size()) {
      std::size_t j = rel.find('/', i);
      if (j == std::string::npos) j = rel.size();
      p += '/';
      p.append(rel, i, j - i);
      ::mkdir(p.c_str(), 0755);
      i = j + 1;
    }
  }
  // Writes a file (creating its directories) in place, as sysfs attributes change.
  void write(const std::string& rel, const std::string& content) const {
    const auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
    std::ofstream f(path(rel), std::ios::trunc);
    f << content;
  }
  // Replaces a file atomically (write a temporary, rename over), so a reader
  // never sees it half written.
  void replace(const std::string& rel, const std::string& content) const {
    const std::string tmp = path(rel) + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << content;
    }
    ::rename(tmp.c_str(), path(rel).c_str());
  }
  // An 8-byte little-endian register at byte offset `reg`, as /dev/cpu/N/msr reads.
  void write_msr(const std::string& rel, std::uint64_t reg, std::uint64_t value) const {
    const auto slash = rel.rfind('/');
    if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
    FILE* f = std::fopen(path(rel).c_str(), "r+b");
    if (!f) f = std::fopen(path(rel).c_str(), "w+b");
    if (!f) throw std::runtime_error("cannot open " + rel);
    fseeko(f, off_t(reg), SEEK_SET);
    std::fwrite(&value, sizeof value, 1, f);
    std::fclose(f);
  }

 private:
  std::string root_;
};

}  // namespace flopwatt::power::testing
