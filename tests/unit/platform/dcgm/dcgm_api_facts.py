"""Writes two C++ files that list the same facts about every DCGM declaration of
src/platform/dcgm/dcgm_api.h: one compiled against our header, one against NVIDIA's own DCGM 4 headers
dcgm_agent.h, dcgm_structs.h and dcgm_fields.h (from the pinned github.com/NVIDIA/go-dcgm module).
dcgm_api_check_test.cc compares the two lists. The facts and how the header is read: ../api_facts.py,
shared with the NVML check.

Usage: dcgm_api_facts.py DCGM_API_H OURS_CC NVIDIA_CC"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import api_facts  # noqa: E402  (tests/unit/platform/api_facts.py)

# dcgm_agent.h includes dcgm_structs.h, which includes dcgm_fields.h: each compiles as C++ on its own, in
# this order or any other. MAKE_DCGM_VERSION is checked through the version constants built with it.
api_facts.main(api_facts.Api(
    "DCGM", "dcgmReturn_t",
    "#include <dcgm_agent.h>  // NVIDIA's, from the pinned go-dcgm module\n"
    "#include <dcgm_fields.h>\n"
    "#include <dcgm_structs.h>\n",
    helper_macros=("MAKE_DCGM_VERSION",)))
