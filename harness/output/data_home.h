// Where flopwatt keeps what it records for the user, never the current directory: the XDG base
// directory specification's $XDG_DATA_HOME (absolute only), else ~/.local/share, then flopwatt/.
// The results store's default file and every run directory without --out live below it.
#pragma once
#include <string>

namespace flopwatt {

// $XDG_DATA_HOME/flopwatt, or ~/.local/share/flopwatt; /tmp/flopwatt-<uid> with neither set.
std::string data_home();

// The default directory of a run: data_home()/runs/<name>.
std::string default_run_dir(const std::string& name);

}  // namespace flopwatt
