"""Which folder of src/ may depend on which: a test that fails on an #include or a CMake link against the
intended direction, so that a folder cycle (attribution <-> events) or a collector reaching into the event
path cannot come back unnoticed.

Intended shape (docs/design/node-state.md): core, platform and parsers at the bottom; node (the typed node
state) above them; collectors, attribution and events each read node state but not one another; sinks
never reach into collectors, attribution or node state; agent wires everything.

Usage: include_directions_test.py REPO_ROOT"""

import os
import re
import sys
import tempfile
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

# folder -> folders of src/ it must not include (directly, in any file below it) nor link (CMake targets
# gpuscope_<folder>...).
FORBIDDEN = {
    "core": ["platform", "parsers", "node", "collectors", "attribution", "events", "sinks", "agent"],
    "parsers": ["node", "collectors", "attribution", "events", "sinks", "agent"],
    "platform": ["node", "collectors", "attribution", "events", "sinks", "agent"],
    "node": ["collectors", "attribution", "events", "sinks", "agent"],
    "collectors": ["attribution", "events", "sinks", "agent"],
    "attribution": ["collectors", "events", "sinks", "agent"],
    "events": ["collectors", "attribution", "agent"],
    "sinks": ["collectors", "attribution", "node", "agent"],
    "cli": ["node", "collectors", "attribution", "events", "sinks", "agent"],
    "ebpf": ["node", "collectors", "attribution", "events", "sinks", "agent"],
}
# CMake target prefixes of each folder.
TARGET_PREFIX = {
    "core": "gpuscope_core", "platform": "gpuscope_platform", "parsers": "gpuscope_parsers",
    "node": "gpuscope_node", "collectors": "gpuscope_collector", "attribution": "gpuscope_attribution",
    "events": "gpuscope_events", "sinks": "gpuscope_sink", "agent": "gpuscope_agent",
    "cli": "gpuscope_cli", "ebpf": "gpuscope_ebpf",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"src/([a-z_]+)/', re.M)
TARGET = re.compile(r"\bgpuscope_[a-z0-9_]+\b")


def top_folder(src, path):
    return os.path.relpath(path, src).split(os.sep)[0]


def violations(root):
    """Every (file, folder, what) that breaks FORBIDDEN under root/src."""
    src = os.path.join(root, "src")
    found = []
    for directory, _, files in os.walk(src):
        for name in sorted(files):
            path = os.path.join(directory, name)
            folder = top_folder(src, path)
            forbidden = FORBIDDEN.get(folder, [])
            if not forbidden:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if name.endswith((".h", ".cc")):
                for target in INCLUDE.findall(text):
                    if target in forbidden:
                        found.append((os.path.relpath(path, root), folder, f'#include "src/{target}/..."'))
            elif name == "CMakeLists.txt" or name.endswith(".cmake"):
                # Only target_link_libraries lines: a folder's own targets are named by add_library.
                for call in re.findall(r"target_link_libraries\s*\(([^)]*)\)", text, re.S):
                    for target in TARGET.findall(call):
                        for other in forbidden:
                            if target.startswith(TARGET_PREFIX[other]):
                                found.append((os.path.relpath(path, root), folder, f"links {target}"))
    return found


class IncludeDirections(unittest.TestCase):
    def test_the_tree_keeps_the_intended_directions(self):
        found = violations(sys.argv[1])
        self.assertEqual(found, [], "\n".join(f"{p}: {folder}/ must not {what}" for p, folder, what in found))

    def test_a_collector_including_the_event_path_is_caught(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "src", "collectors", "gpu"))
            with open(os.path.join(root, "src", "collectors", "gpu", "x.cc"), "w") as f:
                f.write('#include "src/node/xid_ledger.h"\n#include "src/events/event.h"\n')
            with open(os.path.join(root, "src", "collectors", "gpu", "CMakeLists.txt"), "w") as f:
                f.write("add_library(gpuscope_collector_x x.cc)\n"
                        "target_link_libraries(gpuscope_collector_x PUBLIC gpuscope_node gpuscope_events_core)\n")
            self.assertEqual(sorted(what for _, _, what in violations(root)),
                             ['#include "src/events/..."', "links gpuscope_events_core"])

    def test_attribution_and_events_may_not_include_each_other(self):
        with tempfile.TemporaryDirectory() as root:
            for folder, other in (("attribution", "events"), ("events", "attribution")):
                os.makedirs(os.path.join(root, "src", folder))
                with open(os.path.join(root, "src", folder, "y.h"), "w") as f:
                    f.write(f'#include "src/{other}/z.h"\n')
            self.assertEqual(len(violations(root)), 2)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])
