#include "npu/xdna/xclbin_survey.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "npu/xdna/artifacts.h"
#include "npu/xdna/xclbin.h"
#include "workloads/error.h"

namespace flopwatt::npu::xdna {

namespace fs = std::filesystem;

namespace {

std::string canonical_or_same(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p : c.string();
}

std::vector<std::string> xclbins_in(const std::string& dir) {
  std::vector<std::string> v;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".xclbin" && it->is_regular_file(ec)) v.push_back(it->path().string());
  std::sort(v.begin(), v.end());
  return v;
}

XclbinListing list_one(const std::string& path, const std::vector<const ArtifactDesign*>& naming,
                       const std::string& manifest_problem) {
  XclbinListing l;
  l.path = path;
  Xclbin x;
  try {
    x = load_xclbin(path);
  } catch (const InputError& e) {
    l.what = "unreadable xclbin";
    l.why = e.problem();
    return l;
  }
  const XclbinVerdict v = judge_xclbin(x);
  l.what = v.what;
  l.compute_units = x.cus.size();
  if (!v.runnable) {
    l.why = v.why;
  } else if (!naming.empty()) {
    l.runnable = true;
    for (const auto* d : naming) l.design += (l.design.empty() ? "" : ", ") + d->name;
  } else {
    // aiecc gives every design the same kernel arguments (opcode, instr,
    // ninstr, bo0..bo4), so the file alone does not say it is a GEMM, nor its shape.
    l.why = manifest_problem.empty()
                ? "no design in manifest.json names it, so flopwatt does not know it is a GEMM or its M, N, K"
                : "no usable manifest.json beside it (" + manifest_problem + ")";
  }
  return l;
}

}  // namespace

std::vector<XclbinListing> survey_xclbins(const std::string& artifacts_dir, const std::vector<std::string>& extra) {
  ArtifactSet set;
  std::string manifest_problem;
  try {
    set = load_artifacts(artifacts_dir);
  } catch (const InputError& e) {
    manifest_problem = e.problem();
  }
  std::vector<std::string> paths;
  for (const auto& d : set.designs) paths.push_back(d.xclbin);
  for (const auto& p : xclbins_in(artifacts_dir)) paths.push_back(p);
  for (const auto& p : extra) paths.push_back(p);
  std::vector<std::string> seen;
  std::vector<XclbinListing> out;
  for (const auto& p : paths) {
    const std::string key = canonical_or_same(p);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    std::vector<const ArtifactDesign*> naming;
    for (const auto& d : set.designs)
      if (canonical_or_same(d.xclbin) == key) naming.push_back(&d);
    out.push_back(list_one(p, naming, manifest_problem));
  }
  return out;
}

}  // namespace flopwatt::npu::xdna
