#!/usr/bin/env python3
"""Writes the help2man include of gpuscope(1): the static sections of gpuscope.h2m, then one section per
command of `gpuscope --help` with that command's own --help, preformatted, so that `man gpuscope` carries
every command's flags as the binary states them.

Usage: cli_man_sections.py GPUSCOPE STATIC_H2M OUT
"""
import subprocess
import sys


def roff_preformatted(text):
    """`text` as a no-fill roff block: backslashes escaped, lines that roff would read as requests
    protected."""
    lines = [".nf"]
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    lines.append(".fi")
    return "\n".join(lines) + "\n"


def commands(main_help):
    """The command names listed under "Commands:" in `gpuscope --help`."""
    names = []
    listing = False
    for line in main_help.splitlines():
        if line.strip() == "Commands:":
            listing = True
        elif listing and line.startswith("  ") and line.strip():
            names.append(line.split()[0])
        elif listing and not line.strip() and names:
            break
    return names


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    binary, static, target = argv[1:]
    main_help = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
    names = commands(main_help)
    if not names:
        sys.stderr.write("cli_man_sections.py: gpuscope --help lists no command\n")
        return 1
    with open(static, encoding="utf-8") as f:
        out = f.read().rstrip("\n") + "\n"
    for name in names:
        text = subprocess.run([binary, name, "--help"], check=True, capture_output=True, text=True).stdout
        out += f"\n[COMMAND {name.upper()}]\n" + roff_preformatted(text)
    with open(target, "w", encoding="utf-8") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
