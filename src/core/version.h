// Build identity: version, git revision and compiler, as gpuscope_build_info and --version show them.
// The revision is compiled into version.cc alone, so a new commit rebuilds one file, not the tree.
//
// Thread-safety: constants.
#pragma once

#include <string_view>

namespace gpuscope {

std::string_view Version();
std::string_view Revision();
std::string_view Compiler();

}  // namespace gpuscope
