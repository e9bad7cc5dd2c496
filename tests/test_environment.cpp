// Linked into every test executable (flopwatt_add_test): a run a test starts
// is recorded in the results store and stores its ceilings in the cache,
// never in the user's home nor in a store the user's FLOPWATT_STORE names.
// Set here, before main, rather than as ctest's ENVIRONMENT property:
// gtest_discover_tests splits a property value at its `;`, and with two
// variables in it only the first was set, so the tests read and wrote the
// user's ~/.cache/flopwatt/peaks and FLOPWATT_STORE was never unset.
#include <cstdlib>

namespace {

const bool kIsolated = [] {
  setenv("XDG_DATA_HOME", FLOPWATT_TEST_DATA_HOME, 1);
  setenv("XDG_CACHE_HOME", FLOPWATT_TEST_CACHE_HOME, 1);
  unsetenv("FLOPWATT_STORE");
  unsetenv("FLOPWATT_PEAK_DIR");
  return true;
}();

}  // namespace
