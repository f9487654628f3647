// `gpuscope top`: a live terminal view of the fleet from Prometheus, drawn with ncurses. A TopRefresher
// (top_refresher.h) runs the fleet's queries (a fixed number per refresh, whatever the fleet's size) every
// --refresh seconds on its own thread and hands the newest snapshot to the UI thread, which only reads keys,
// lays out (top_view.h) and paints; a slow or failing Prometheus therefore never freezes the keys, and a
// failed refresh shows as STALE with its error while the last good snapshot stays on screen. `--once` prints
// one frame as plain text (every node, no paging) and exits.
//
// Thread-safety: the command's run function owns its threads; call it from one thread.
#pragma once

#include "src/cli/command.h"

namespace gpuscope {

// The `gpuscope top` entry of the command table.
Command TopCommand();

}  // namespace gpuscope
