"""Fails the default test run when a test skipped that is not expected to skip there.

A skip is honest only where the run cannot check the thing (e.g. root reads every file, so EACCES cannot
be produced). Anything else that skips means a tool or a permission is missing and a test silently
checked nothing. Usage: check_skips.py CTEST_LOG EXPECTED_SKIPS_FILE
"""

import re
import sys


def main(argv):
    log_path, expected_path = argv[1], argv[2]
    with open(log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    skipped = set(re.findall(r"^\s*\d+ - (\S+) \(Skipped\)\s*$", log, re.M))
    expected = set()
    with open(expected_path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                expected.add(line)
    unexpected = sorted(skipped - expected)
    for name in unexpected:
        print(f"check_skips: {name} skipped, and tests/expected-skips.txt does not expect it")
    print(f"check_skips: {len(skipped)} skipped, {len(unexpected)} unexpected")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
