// The facts nvml_api_facts.py generates about each NVML declaration (api_facts.h), once compiled against
// our src/platform/nvml/nvml_api.h and once against NVIDIA's nvml.h; nvml_api_check_test.cc compares them.
//
// Thread-safety: immutable data.
#pragma once

#include <vector>

#include "tests/unit/platform/api_facts.h"

namespace gpuscope {

const std::vector<ApiFact>& OurNvmlFacts();     // compiled against src/platform/nvml/nvml_api.h
const std::vector<ApiFact>& NvidiaNvmlFacts();  // compiled against NVIDIA's nvml.h

}  // namespace gpuscope
