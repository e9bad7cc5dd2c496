// Built without prometheus-cpp (FLOPWATT_WITH_PROMETHEUS=OFF or not found).
#include "harness/serve/serve.h"
#include "workloads/error.h"

namespace flopwatt::serve {

int serve(const ServeOptions&, std::FILE*) {
  throw InputError("flopwatt serve", "this flopwatt was built without prometheus-cpp, so it has no exporter",
                   "apt-get install prometheus-cpp-dev and rebuild (FLOPWATT_WITH_PROMETHEUS=AUTO or ON)");
}

}  // namespace flopwatt::serve
