"""The end of every Python test script: runs its unittest cases and tells CTest the truth.

Exit 0 when at least one case ran and every case passed, 1 on any failure or error (or when no case
ran at all), and 77 when every case was skipped (no root, no Slurm, no openssl, ...). The scripts are
registered with SKIP_RETURN_CODE 77 (cmake/GpuscopeTesting.cmake), so a run in which nothing could be
checked shows as a skip instead of a pass.
"""

import sys
import unittest

SKIPPED = 77


def main(argv=None):
    program = unittest.main(module="__main__", argv=argv, verbosity=2, exit=False)
    result = program.result
    if not result.wasSuccessful() or result.testsRun == 0:
        sys.exit(1)
    if len(result.skipped) == result.testsRun:
        print(f"unittest_main: all {result.testsRun} cases skipped", file=sys.stderr)
        sys.exit(SKIPPED)
    sys.exit(0)
