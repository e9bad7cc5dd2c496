#include "bench/roof.h"

namespace flopwatt::gbench {

void place_on_stored_roof(benchmark::State& st, Measurement m, double seconds, const RooflineSet* roofs,
                          std::vector<std::string>* above_roof) {
  if (!roofs || !roofs->host || st.iterations() == 0 || !(seconds > 0)) return;
  m.flop_per_s = m.flop * double(st.iterations()) / seconds;
  m.time_s.median = seconds / double(st.iterations());
  place_measurement(m, *roofs);
  if (!m.fraction_of_roof) return;
  st.counters["roof_fraction"] = *m.fraction_of_roof;
  if (*m.fraction_of_roof > kRoofTolerance) {
    const auto rows = rows_above_roof({m});
    st.SetLabel("above its roof: " + rows.front());
    if (above_roof) above_roof->push_back(rows.front());
  }
}

}  // namespace flopwatt::gbench
