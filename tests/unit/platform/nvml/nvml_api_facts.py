"""Writes two C++ files that list the same facts about every NVML declaration of
src/platform/nvml/nvml_api.h: one compiled against our header, one against NVIDIA's own nvml.h (from the
pinned github.com/NVIDIA/go-nvml module). nvml_api_check_test.cc compares the two lists.

Facts, each named the same in both files:
  - every function of the GPUSCOPE_NVML_FUNCTIONS list and every other function declared: its type,
    checked with static_assert in the file compiled against NVIDIA's header (our parameter list, spelled
    with our type names, must be exactly NVIDIA's function type there; the type names themselves are
    checked by the facts below);
  - every struct and union: sizeof, alignof, and for each field its offset, size and kind of type;
  - every other typedef: sizeof and kind of type;
  - every enum: sizeof, and the value of each enumerator;
  - every object-like macro: its value.
The header is our own and clang-formatted; anything in it this script does not understand is an error,
so a declaration can never be left unchecked.

Usage: nvml_api_facts.py NVML_API_H OURS_CC NVIDIA_CC"""

import re
import sys

HEADER, OURS_CC, NVIDIA_CC = sys.argv[1:4]


def fail(message):
    sys.exit(f"nvml_api_facts.py: {HEADER}: {message}")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


source = strip_comments(open(HEADER, encoding="utf-8").read())
source = source.replace("\\\n", " ")  # join continued lines (macros)

constants = []         # object-like macro names
function_lists = []    # (name, full "#define NAME(X) ..." text) of X-macro lists of functions
declarations = []      # lines that are not preprocessor directives
for line in source.splitlines():
    stripped = line.strip()
    if not stripped.startswith("#"):
        declarations.append(line)
        continue
    directive = re.match(r"#\s*(\w+)\s*(.*)", stripped)
    kind, rest = directive.group(1), directive.group(2)
    if kind in ("pragma", "include", "undef"):
        continue
    if kind != "define":
        fail(f"unexpected directive: {stripped}")
    macro = re.match(r"(\w+)(\([^)]*\))?\s*(.*)", rest)
    name, params, body = macro.group(1), macro.group(2), macro.group(3)
    if params is None:
        if not body:
            fail(f"macro without a value: {name}")
        constants.append(name)
    elif name == "GPUSCOPE_NVML_FUNCTIONS":
        function_lists.append((name, f"#define {name}{params} {body}"))
    elif name == "GPUSCOPE_NVML_DECLARE":
        continue  # the helper that declares the list's functions
    else:
        fail(f"function-like macro this check does not know: {name}")
if not function_lists:
    fail("no GPUSCOPE_NVML_FUNCTIONS list")

code = " ".join(declarations)
code = re.sub(r'extern\s+"C"\s*\{', " ", code)
# The list's own declarations (checked through the list itself).
code, declared = re.subn(r"\bGPUSCOPE_NVML_FUNCTIONS\s*\(\s*GPUSCOPE_NVML_DECLARE\s*\)", " ", code)
if declared != 1:
    fail("GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_DECLARE) is not there once")

records = []    # (name, [fields])
enums = []      # (name, [enumerators])
typedefs = []   # simple typedef names
functions = []  # (return type, name, parameter list) declared outside the X-macro


def take_bodies(match):
    kind, body, name = match.group(1), match.group(3), match.group(4)
    if kind == "enum":
        enumerators = []
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            enumerator = re.fullmatch(r"(\w+)(\s*=\s*[^,]+)?", item)
            if not enumerator:
                fail(f"enumerator not understood in {name}: {item}")
            enumerators.append(enumerator.group(1))
        enums.append((name, enumerators))
    else:
        fields = []
        # A nested anonymous struct (nvmlGpmMetric_t::metricInfo): the member and each of its fields.
        def nested(inner):
            members = []
            for item in inner.group(1).split(";"):
                item = item.strip()
                if item:
                    member = re.fullmatch(r"[\w\s\*]+?\b(\w+)\s*(\[[^\]]+\])?", item)
                    if not member:
                        fail(f"field not understood in {name}: {item}")
                    members.append(member.group(1))
            fields.extend(f"{inner.group(2)}.{member}" for member in members)
            return f"struct {inner.group(2)}_t {inner.group(2)};"
        body = re.sub(r"struct\s*\{([^{}]*)\}\s*(\w+)\s*;", nested, body)
        for item in body.split(";"):
            item = item.strip()
            if not item:
                continue
            if "," in item or "(" in item or "{" in item:
                fail(f"field not understood in {name}: {item}")
            field = re.fullmatch(r"[\w\s\*]+?\b(\w+)\s*(\[[^\]]+\])?", item)
            if not field:
                fail(f"field not understood in {name}: {item}")
            fields.append(field.group(1))
        records.append((name, fields))
    return " "


code = re.sub(r"typedef\s+(enum|struct|union)\s*(\w+)?\s*\{((?:[^{}]|\{[^{}]*\})*)\}\s*(\w+)\s*;", take_bodies,
              code)
for statement in code.split(";"):
    statement = " ".join(statement.split())
    if not statement or statement == "}":
        continue
    statement = statement.lstrip("} ").strip()
    typedef = re.fullmatch(r"typedef\s+[\w\s\*]+?\b(\w+)", statement)
    if typedef:
        typedefs.append(typedef.group(1))
        continue
    function = re.fullmatch(r"([\w\s\*]+?)\s*\b(nvml\w+)\s*\((.*)\)", statement)
    if function:
        functions.append((function.group(1).strip(), function.group(2), function.group(3)))
        continue
    fail(f"declaration not understood: {statement}")

for name, fields in records:
    if not fields:
        fail(f"struct without fields: {name}")


def facts_body():
    lines = []
    # Functions: one fact each, so both lists have the same length; the check itself is static.
    lines.append("#define GPUSCOPE_NVML_FACT_FUNCTION(name, params, args) "
                 '{"function", #name, 1},')
    lines.append("  GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_FACT_FUNCTION)")
    lines.append("#undef GPUSCOPE_NVML_FACT_FUNCTION")
    for _, name, _ in functions:
        lines.append(f'  {{"function", "{name}", 1}},')
    for name, fields in records:
        lines.append(f'  {{"struct", "sizeof({name})", sizeof({name})}},')
        lines.append(f'  {{"struct", "alignof({name})", alignof({name})}},')
        for field in fields:
            member = f"decltype(std::declval<{name}&>().{field})"
            lines.append(f'  {{"field", "offsetof({name}, {field})", offsetof({name}, {field})}},')
            lines.append(f'  {{"field", "sizeof({name}::{field})", sizeof({member})}},')
            lines.append(f'  {{"field", "kind({name}::{field})", gpuscope::NvmlTypeKind<{member}>()}},')
    for name in typedefs:
        lines.append(f'  {{"typedef", "sizeof({name})", sizeof({name})}},')
        lines.append(f'  {{"typedef", "kind({name})", gpuscope::NvmlTypeKind<{name}>()}},')
    for name, enumerators in enums:
        lines.append(f'  {{"enum", "sizeof({name})", sizeof({name})}},')
        for enumerator in enumerators:
            lines.append(f'  {{"enumerator", "{enumerator}", static_cast<unsigned long long>({enumerator})}},')
    for name in constants:
        lines.append(f'  {{"constant", "{name}", static_cast<unsigned long long>({name})}},')
    return "\n".join(lines)


PREAMBLE = """// Generated by tests/unit/platform/nvml/nvml_api_facts.py from src/platform/nvml/nvml_api.h.
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/unit/platform/nvml/nvml_api_facts.h"
"""

with open(OURS_CC, "w", encoding="utf-8") as out:
    out.write(PREAMBLE)
    out.write('#include "src/platform/nvml/nvml_api.h"\n\n')
    out.write("namespace gpuscope {\n\nconst std::vector<NvmlFact>& OurNvmlFacts() {\n"
              "  static const std::vector<NvmlFact> kFacts = {\n")
    out.write(facts_body())
    out.write("\n  };\n  return kFacts;\n}\n\n}  // namespace gpuscope\n")

with open(NVIDIA_CC, "w", encoding="utf-8") as out:
    out.write(PREAMBLE)
    out.write("#define NVML_NO_UNVERSIONED_FUNC_DEFS  // only the versioned names, as we declare them\n")
    out.write("#include <nvml.h>  // NVIDIA's, from the pinned go-nvml module\n\n")
    for name, definition in function_lists:
        out.write(definition + "\n")
    out.write("\n// Our parameter lists, read with NVIDIA's types, are exactly NVIDIA's function types.\n")
    out.write("#pragma GCC diagnostic push\n")
    out.write('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // e.g. the ..ThrottleReasons '
              "fallback\n")
    out.write("#define GPUSCOPE_NVML_CHECK_SIGNATURE(name, params, args) \\\n"
              "  static_assert(std::is_same_v<decltype(&::name), nvmlReturn_t(*) params>, \\\n"
              '                \"NVIDIA declares \" #name \" with another signature than nvml_api.h\");\n')
    out.write("GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_CHECK_SIGNATURE)\n")
    out.write("#undef GPUSCOPE_NVML_CHECK_SIGNATURE\n")
    for result, name, params in functions:
        out.write(f"static_assert(std::is_same_v<decltype(&::{name}), {result} (*)({params})>,\n"
                  f'              "NVIDIA declares {name} with another signature than nvml_api.h");\n')
    out.write("#pragma GCC diagnostic pop\n\n")
    out.write("namespace gpuscope {\n\nconst std::vector<NvmlFact>& NvidiaNvmlFacts() {\n"
              "  static const std::vector<NvmlFact> kFacts = {\n")
    out.write(facts_body())
    out.write("\n  };\n  return kFacts;\n}\n\n}  // namespace gpuscope\n")
