// power/'s sources and the harness's calls use the machine-file layer under
// their own namespace's names; the layer itself is sysfs/files.h.
#pragma once
#include "sysfs/files.h"

namespace flopwatt::power {

using sysfs::errno_text;
using sysfs::is_directory;
using sysfs::join_path;
using sysfs::list_dir;
using sysfs::natural_less;
using sysfs::path_exists;
using sysfs::read_double;
using sysfs::read_i64_file;
using sysfs::read_int;
using sysfs::read_text;
using sysfs::read_trimmed;
using sysfs::read_u64_file;
using sysfs::TextRead;
using sysfs::under_root;

}  // namespace flopwatt::power
