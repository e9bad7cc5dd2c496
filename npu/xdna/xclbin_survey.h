// Every xclbin `flopwatt npu info` can see, each with what it is and whether
// flopwatt runs it: the designs manifest.json lists, any other *.xclbin in the
// artifacts directory, and files named on the command line. Nothing here
// refuses a file: an unreadable one is listed with the reason.
#pragma once
#include <string>
#include <vector>

namespace flopwatt::npu::xdna {

struct XclbinListing {
  std::string path;
  std::string what;     // judge_xclbin's description, or "unreadable xclbin"
  bool runnable = false;
  std::string design;   // the manifest design that runs it, when runnable
  std::string why;      // when not runnable
  std::size_t compute_units = 0;
};

// `artifacts_dir` may lack a manifest (its xclbins are then listed as not
// runnable, naming the manifest's problem); `extra` are further paths.
std::vector<XclbinListing> survey_xclbins(const std::string& artifacts_dir, const std::vector<std::string>& extra);

}  // namespace flopwatt::npu::xdna
