// Our NVML declarations (src/platform/nvml/nvml_api.h) against NVIDIA's own nvml.h, taken from the
// github.com/NVIDIA/go-nvml module pinned in scripts/versions.env. nvml_api_facts.py lists every
// declaration of our header; the list is compiled twice, once against each header. Function types are
// checked while compiling against NVIDIA's header (static_assert: a mismatch does not build); struct
// sizes and field offsets, typedefs, enumerators and constants are compared here, fact by fact, so a
// mismatch names what differs. A declaration added to nvml_api.h later is checked the same way without
// touching this test.
#include <gtest/gtest.h>

#include "tests/unit/platform/nvml/nvml_api_facts.h"

namespace gpuscope {
namespace {

TEST(NvmlApiCheck, EveryDeclarationOfOurHeaderMatchesNvidiasNvmlH) {
  ExpectSameApiFacts(OurNvmlFacts(), NvidiaNvmlFacts(), "nvml.h");
}

}  // namespace
}  // namespace gpuscope
