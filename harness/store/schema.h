// The store's schema, one text for both engines (types both accept), and the
// migrations that bring an older store to kSchemaVersion. Migration i takes a
// store from version i to i + 1; a released migration is never edited.
#pragma once
#include <string>
#include <vector>

namespace flopwatt::store {

const std::vector<std::string>& migrations();

}  // namespace flopwatt::store
