// Our DCGM declarations (src/platform/dcgm/dcgm_api.h) against NVIDIA's own DCGM 4 headers (dcgm_agent.h,
// dcgm_structs.h, dcgm_fields.h), taken from the github.com/NVIDIA/go-dcgm module pinned in
// scripts/versions.env. dcgm_api_facts.py lists every declaration of our header; the list is compiled
// twice, once against each. Function types (the GPUSCOPE_DCGM_FUNCTIONS list and errorString) are
// checked while compiling against NVIDIA's headers (static_assert: a mismatch does not build); struct
// sizes and field offsets, typedefs, enumerators and constants are compared here, fact by fact, so a
// mismatch names what differs. A declaration added to dcgm_api.h later is checked the same way without
// touching this test.
#include <gtest/gtest.h>

#include "tests/unit/platform/dcgm/dcgm_api_facts.h"

namespace gpuscope {
namespace {

TEST(DcgmApiCheck, EveryDeclarationOfOurHeaderMatchesNvidiasDcgmHeaders) {
  ExpectSameApiFacts(OurDcgmFacts(), NvidiaDcgmFacts(), "dcgm_agent.h, dcgm_structs.h, dcgm_fields.h");
}

}  // namespace
}  // namespace gpuscope
