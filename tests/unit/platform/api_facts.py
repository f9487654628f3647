"""Writes two C++ files that list the same facts about every declaration of one of our headers of an NVIDIA
API (src/platform/nvml/nvml_api.h, src/platform/dcgm/dcgm_api.h): one compiled against our header, one
against NVIDIA's own headers. The API's check test compares the two lists (ExpectSameApiFacts, api_facts.h).
Shared by nvml/nvml_api_facts.py and dcgm/dcgm_api_facts.py, which say what differs from one API to the
other (an Api).

Facts, each named the same in both files:
  - every function of the GPUSCOPE_<API>_FUNCTIONS list and every other function declared: its type,
    checked with static_assert in the file compiled against NVIDIA's headers (our parameter list, spelled
    with our type names, must be exactly NVIDIA's function type there; the type names themselves are
    checked by the facts below), and the list's against our own declarations in the other file;
  - every struct and union: sizeof, alignof, and for each field (a nested anonymous struct or union's
    fields too) its offset, size and kind of type;
  - every other typedef: sizeof and kind of type;
  - every enum: sizeof, and the value of each enumerator;
  - every object-like macro: its value (a floating-point one's bits).
The header is our own and clang-formatted; anything in it this script does not understand is an error,
so a declaration can never be left unchecked."""

import os
import re
import sys


class Api:
    """What differs from one API to another.

    name: "NVML"; the list is GPUSCOPE_<name>_FUNCTIONS, our header src/platform/<name>/<name>_api.h.
    result: the type every function of the list returns ("nvmlReturn_t").
    nvidia_includes: the lines that include NVIDIA's headers, with any define they need first.
    helper_macros: the function-like macros other than the list, checked through the constants using them.
    """

    def __init__(self, name, result, nvidia_includes, helper_macros=()):
        self.name = name
        self.result = result
        self.nvidia_includes = nvidia_includes
        self.helper_macros = helper_macros
        self.folder = name.lower()
        self.title = name.capitalize()
        self.functions_list = f"GPUSCOPE_{name}_FUNCTIONS"
        # The helper that declares the list's functions, where the header declares them through the list.
        self.declare_helper = f"GPUSCOPE_{name}_DECLARE"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


class Declarations:
    """What one header declares, by kind."""

    def __init__(self):
        self.constants = []         # object-like macro names
        self.function_lists = []    # (name, full "#define NAME(X) ..." text) of X-macro lists of functions
        self.records = []           # (name, [fields])
        self.enums = []             # (name, [enumerators])
        self.typedefs = []          # simple typedef names
        self.functions = []         # (return type, name, parameter list) declared outside the X-macro


def parse(api, header, fail):
    found = Declarations()
    source = strip_comments(open(header, encoding="utf-8").read())
    source = source.replace("\\\n", " ")  # join continued lines (macros)

    declarations = []      # lines that are not preprocessor directives
    declare_helper = False
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
            found.constants.append(name)
        elif name == api.functions_list:
            found.function_lists.append((name, f"#define {name}{params} {body}"))
        elif name == api.declare_helper:
            declare_helper = True
        elif name in api.helper_macros:
            continue  # checked through the constants that use it
        else:
            fail(f"function-like macro this check does not know: {name}")
    if not found.function_lists:
        fail(f"no {api.functions_list} list")

    code = " ".join(declarations)
    code = re.sub(r'extern\s+"C"\s*\{', " ", code)
    if declare_helper:
        # The list's own declarations (checked through the list itself).
        code, declared = re.subn(rf"\b{api.functions_list}\s*\(\s*{api.declare_helper}\s*\)", " ", code)
        if declared != 1:
            fail(f"{api.functions_list}({api.declare_helper}) is not there once")

    def member_name(record, item):
        member = re.fullmatch(r"[\w\s\*]+?\b(\w+)\s*(\[[^\]]+\])?", item)
        if not member:
            fail(f"field not understood in {record}: {item}")
        return member.group(1)

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
            found.enums.append((name, enumerators))
        else:
            fields = []

            # A nested anonymous struct or union (nvmlGpmMetric_t::metricInfo, dcgmFieldValue_v2::value):
            # the member and each of its fields.
            def nested(inner):
                items = [item.strip() for item in inner.group(2).split(";")]
                members = [member_name(name, item) for item in items if item]
                fields.extend(f"{inner.group(3)}.{member}" for member in members)
                return f"{inner.group(1)} {inner.group(3)}_t {inner.group(3)};"
            body = re.sub(r"(struct|union)\s*\{([^{}]*)\}\s*(\w+)\s*;", nested, body)
            for item in body.split(";"):
                item = item.strip()
                if not item:
                    continue
                if "," in item or "(" in item or "{" in item:
                    fail(f"field not understood in {name}: {item}")
                fields.append(member_name(name, item))
            found.records.append((name, fields))
        return " "

    code = re.sub(r"typedef\s+(enum|struct|union)\s*(\w+)?\s*\{((?:[^{}]|\{[^{}]*\})*)\}\s*(\w+)\s*;",
                  take_bodies, code)
    for statement in code.split(";"):
        statement = " ".join(statement.split())
        if not statement or statement == "}":
            continue
        statement = statement.lstrip("} ").strip()
        typedef = re.fullmatch(r"typedef\s+[\w\s\*]+?\b(\w+)", statement)
        if typedef:
            found.typedefs.append(typedef.group(1))
            continue
        function = re.fullmatch(r"([\w\s\*]+?)\s*\b(\w+)\s*\((.*)\)", statement)
        if function:
            found.functions.append((function.group(1).strip(), function.group(2), function.group(3)))
            continue
        fail(f"declaration not understood: {statement}")

    for name, fields in found.records:
        if not fields:
            fail(f"struct without fields: {name}")
    return found


def facts_body(api, found):
    lines = []
    # Functions: one fact each, so both lists have the same length; the check itself is static.
    lines.append(f"#define GPUSCOPE_{api.name}_FACT_FUNCTION(name, params, args) "
                 '{"function", #name, 1},')
    lines.append(f"  {api.functions_list}(GPUSCOPE_{api.name}_FACT_FUNCTION)")
    lines.append(f"#undef GPUSCOPE_{api.name}_FACT_FUNCTION")
    for _, name, _ in found.functions:
        lines.append(f'  {{"function", "{name}", 1}},')
    for name, fields in found.records:
        lines.append(f'  {{"struct", "sizeof({name})", sizeof({name})}},')
        lines.append(f'  {{"struct", "alignof({name})", alignof({name})}},')
        for field in fields:
            member = f"decltype(std::declval<{name}&>().{field})"
            lines.append(f'  {{"field", "offsetof({name}, {field})", offsetof({name}, {field})}},')
            lines.append(f'  {{"field", "sizeof({name}::{field})", sizeof({member})}},')
            lines.append(f'  {{"field", "kind({name}::{field})", gpuscope::ApiTypeKind<{member}>()}},')
    for name in found.typedefs:
        lines.append(f'  {{"typedef", "sizeof({name})", sizeof({name})}},')
        lines.append(f'  {{"typedef", "kind({name})", gpuscope::ApiTypeKind<{name}>()}},')
    for name, enumerators in found.enums:
        lines.append(f'  {{"enum", "sizeof({name})", sizeof({name})}},')
        for enumerator in enumerators:
            lines.append(f'  {{"enumerator", "{enumerator}", static_cast<unsigned long long>({enumerator})}},')
    for name in found.constants:
        lines.append(f'  {{"constant", "{name}", gpuscope::ApiConstant({name})}},')
    return "\n".join(lines)


def signature_check(api, message):
    """A macro for the list that checks each function's type against the declaration in scope."""
    return (f"#define GPUSCOPE_{api.name}_CHECK_SIGNATURE(name, params, args) \\\n"
            f"  static_assert(std::is_same_v<decltype(&::name), {api.result}(*) params>, \\\n"
            f'                {message});\n'
            f"{api.functions_list}(GPUSCOPE_{api.name}_CHECK_SIGNATURE)\n"
            f"#undef GPUSCOPE_{api.name}_CHECK_SIGNATURE\n")


def facts_function(api, found, function):
    return (f"namespace gpuscope {{\n\nconst std::vector<ApiFact>& {function}() {{\n"
            "  static const std::vector<ApiFact> kFacts = {\n"
            f"{facts_body(api, found)}\n"
            "  };\n  return kFacts;\n}\n\n}  // namespace gpuscope\n")


def main(api):
    """Usage: <script> <API>_API_H OURS_CC NVIDIA_CC"""
    header, ours_cc, nvidia_cc = sys.argv[1:4]
    script = os.path.basename(sys.argv[0])
    our_header = f"src/platform/{api.folder}/{api.folder}_api.h"

    def fail(message):
        sys.exit(f"{script}: {header}: {message}")

    found = parse(api, header, fail)
    preamble = (f"// Generated by tests/unit/platform/{api.folder}/{script} from {our_header}.\n"
                "#include <cstddef>\n#include <type_traits>\n#include <utility>\n#include <vector>\n\n"
                f'#include "tests/unit/platform/{api.folder}/{api.folder}_api_facts.h"\n')

    with open(ours_cc, "w", encoding="utf-8") as out:
        out.write(preamble)
        out.write(f'#include "{our_header}"\n\n')
        out.write("// The list agrees with our own declarations of its functions.\n")
        out.write(signature_check(api, f'"{os.path.basename(our_header)} declares " #name '
                                       f'" with another signature than its {api.functions_list} entry"'))
        out.write("\n")
        out.write(facts_function(api, found, f"Our{api.title}Facts"))

    with open(nvidia_cc, "w", encoding="utf-8") as out:
        out.write(preamble)
        out.write(api.nvidia_includes + "\n")
        for name, definition in found.function_lists:
            out.write(definition + "\n")
        out.write("\n// Our parameter lists, read with NVIDIA's types, are exactly NVIDIA's function types.\n")
        out.write("#pragma GCC diagnostic push\n")
        out.write('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  '
                  "// e.g. NVML's ..ThrottleReasons fallback\n")
        out.write(signature_check(api, f'"NVIDIA declares " #name " with another signature than '
                                       f'{os.path.basename(our_header)}"'))
        for result, name, params in found.functions:
            out.write(f"static_assert(std::is_same_v<decltype(&::{name}), {result} (*)({params})>,\n"
                      f'              "NVIDIA declares {name} with another signature than '
                      f'{os.path.basename(our_header)}");\n')
        out.write("#pragma GCC diagnostic pop\n\n")
        out.write(facts_function(api, found, f"Nvidia{api.title}Facts"))
