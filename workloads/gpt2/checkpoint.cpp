#include "workloads/gpt2/checkpoint.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "workloads/error.h"
#include "workloads/gpt2/tensor_table.h"

namespace flopwatt::gpt2 {

namespace {

constexpr std::int64_t kHeaderInts = 256;
constexpr std::int64_t kHeaderBytes = kHeaderInts * 4;
const char* kFix = "pass an llm.c GPT-2 checkpoint (fp32, version 3), or omit --checkpoint for a random init";

struct Opened {
  std::ifstream in;
  std::int64_t file_bytes = 0;
  Config config;
};

Opened open_checkpoint(const std::string& path) {
  const std::string where = "--checkpoint " + path;
  Opened o;
  std::error_code ec;
  // file_size of a device or a pipe fails with "Operation not supported": say what is wrong with it instead.
  if (const auto st = std::filesystem::status(path, ec); !ec && st.type() != std::filesystem::file_type::regular)
    throw InputError(where, "not a regular file (a directory, device or pipe)", "pass the path of a checkpoint (.bin)");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError(where, "cannot read the file: " + ec.message(), "check the path and permissions");
  o.file_bytes = static_cast<std::int64_t>(size);
  o.in.open(path, std::ios::binary);
  if (!o.in) throw InputError(where, std::string("cannot open the file: ") + std::strerror(errno),
                              "check the path and permissions");
  if (o.file_bytes < kHeaderBytes)
    throw InputError(where, "truncated: " + std::to_string(o.file_bytes) + " bytes, shorter than the " +
                                std::to_string(kHeaderBytes) + "-byte header", kFix);
  std::int32_t h[kHeaderInts];
  o.in.read(reinterpret_cast<char*>(h), kHeaderBytes);
  if (!o.in) throw InputError(where, "cannot read the header", kFix);
  if (h[0] != kCheckpointMagic)
    throw InputError(where, "wrong magic " + std::to_string(h[0]) + " (expected " +
                                std::to_string(kCheckpointMagic) + "): not an llm.c model checkpoint", kFix);
  if (h[1] != kCheckpointVersionFp32)
    throw InputError(where, "unsupported version " + std::to_string(h[1]) +
                                " (only 3, fp32 parameters, is read; llm.c writes 5 for bf16)", kFix);
  o.config.maxT = h[2];
  o.config.V = h[3];
  o.config.L = h[4];
  o.config.NH = h[5];
  o.config.C = h[6];
  o.config.Vp = h[7];
  validate(o.config, where);
  const std::int64_t want = kHeaderBytes + num_parameters(o.config) * 4;
  if (o.file_bytes != want)
    throw InputError(where, "file has " + std::to_string(o.file_bytes) + " bytes but its header (" +
                                describe(o.config) + ") implies " + std::to_string(want) +
                                (o.file_bytes < want ? " (truncated)" : " (trailing data)"), kFix);
  return o;
}

void read_params(Opened& o, const std::string& path, std::span<float> params) {
  o.in.read(reinterpret_cast<char*>(params.data()), static_cast<std::streamsize>(params.size_bytes()));
  if (!o.in) throw InputError("--checkpoint " + path, "read failed in the parameter block", kFix);
}

}  // namespace

std::int64_t num_parameters(const Config& c) {
  return layout(kParamSpecs, Extents::of(c)).total;
}

Config read_checkpoint_config(const std::string& path) { return open_checkpoint(path).config; }

std::vector<float> read_checkpoint(const std::string& path, Config& config) {
  Opened o = open_checkpoint(path);
  std::vector<float> p(static_cast<std::size_t>(num_parameters(o.config)));
  read_params(o, path, p);
  config = o.config;
  return p;
}

void read_checkpoint_into(const std::string& path, const Config& expected, std::span<float> params) {
  Opened o = open_checkpoint(path);
  if (!(o.config == expected))
    throw InputError("--checkpoint " + path, "model is " + describe(o.config) + ", expected " + describe(expected),
                     "drop --model when passing --checkpoint, or pass a checkpoint of that shape");
  if (static_cast<std::int64_t>(params.size()) != num_parameters(expected))
    throw InputError("--checkpoint " + path, "parameter buffer has the wrong size", kFix);
  read_params(o, path, params);
}

void write_checkpoint_to(const std::function<void(const void*, std::size_t)>& sink, const Config& config,
                         std::span<const float> params, const std::string& where) {
  if (static_cast<std::int64_t>(params.size()) != num_parameters(config))
    throw InputError(where, "parameter count does not match " + describe(config), "this is a bug; report it");
  std::int32_t h[kHeaderInts] = {};
  h[0] = kCheckpointMagic;
  h[1] = kCheckpointVersionFp32;
  h[2] = config.maxT;
  h[3] = config.V;
  h[4] = config.L;
  h[5] = config.NH;
  h[6] = config.C;
  h[7] = config.Vp;
  sink(h, kHeaderBytes);
  sink(params.data(), params.size_bytes());
}

void write_checkpoint(const std::string& path, const Config& config, std::span<const float> params,
                      const std::string& flag) {
  const std::string where = flag + " " + path;
  // mkstemp creates exclusively, so a link planted at a predictable name is never written through.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw InputError(where, std::string("cannot create the file: ") + std::strerror(errno),
                               "check that the directory exists and is writable");
  ::fchmod(fd, 0644);
  bool ok = true;
  try {
    write_checkpoint_to(
        [&](const void* data, std::size_t n) {
          const char* p = static_cast<const char*>(data);
          while (ok && n > 0) {
            const ssize_t w = ::write(fd, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) ok = false;
            else p += w, n -= std::size_t(w);
          }
        },
        config, params, where);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) ok = false;
  if (!ok) {
    ::unlink(tmp.c_str());
    throw InputError(where, "write failed (disk full?)", "free space or pick another path");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InputError(where, "cannot rename the temporary file: " + why, "check permissions");
  }
}

}  // namespace flopwatt::gpt2
