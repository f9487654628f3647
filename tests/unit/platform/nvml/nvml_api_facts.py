"""Writes two C++ files that list the same facts about every NVML declaration of
src/platform/nvml/nvml_api.h: one compiled against our header, one against NVIDIA's own nvml.h (from the
pinned github.com/NVIDIA/go-nvml module). nvml_api_check_test.cc compares the two lists. The facts and how
the header is read: ../api_facts.py, shared with the DCGM check.

Usage: nvml_api_facts.py NVML_API_H OURS_CC NVIDIA_CC"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import api_facts  # noqa: E402  (tests/unit/platform/api_facts.py)

api_facts.main(api_facts.Api(
    "NVML", "nvmlReturn_t",
    "#define NVML_NO_UNVERSIONED_FUNC_DEFS  // only the versioned names, as we declare them\n"
    "#include <nvml.h>  // NVIDIA's, from the pinned go-nvml module\n"))
