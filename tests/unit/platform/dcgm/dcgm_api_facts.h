// The facts dcgm_api_facts.py generates about each DCGM declaration (api_facts.h), once compiled against
// our src/platform/dcgm/dcgm_api.h and once against NVIDIA's dcgm_agent.h, dcgm_structs.h and
// dcgm_fields.h; dcgm_api_check_test.cc compares them.
//
// Thread-safety: immutable data.
#pragma once

#include <vector>

#include "tests/unit/platform/api_facts.h"

namespace gpuscope {

const std::vector<ApiFact>& OurDcgmFacts();     // compiled against src/platform/dcgm/dcgm_api.h
const std::vector<ApiFact>& NvidiaDcgmFacts();  // compiled against NVIDIA's DCGM headers

}  // namespace gpuscope
