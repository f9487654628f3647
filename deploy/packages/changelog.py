#!/usr/bin/env python3
"""Writes a package changelog from CHANGELOG.md.

  changelog.py debian CHANGELOG.md VERSION "NAME <EMAIL>" OUT   Debian's format (changelog.gz of a native
                                                                package; OUT is written uncompressed)
  changelog.py rpm    CHANGELOG.md VERSION "NAME <EMAIL>" OUT   the body of an RPM %changelog

Each "## X.Y.Z - YYYY-MM-DD" section becomes one entry; its "- " items (their "### " heading in front)
become the entry's lines. Fails, naming both, when the newest section is not VERSION: the packages must
not ship a changelog that does not describe them. CHANGELOG.md gives days only; Debian wants each entry
later than the one before it (lintian's latest-changelog-entry-without-new-date), so releases of one day
are stamped one minute apart from midnight, the oldest first.
"""
import datetime
import re
import sys
import textwrap

SECTION = re.compile(r"^## (\d+\.\d+\.\d+(?:[-~][0-9A-Za-z.]+)?) - (\d{4}-\d{2}-\d{2})\s*$")


def parse(text):
    """[(version, date, [(heading, item text)])], newest first, as the file lists them."""
    releases = []
    heading = ""
    item = None
    for line in text.splitlines():
        match = SECTION.match(line)
        if match:
            releases.append((match.group(1), datetime.date.fromisoformat(match.group(2)), []))
            heading = ""
            item = None
            continue
        if not releases:
            continue
        if line.startswith("### "):
            heading = line[4:].strip()
            item = None
        elif line.startswith("- "):
            item = [heading, line[2:].strip()]
            releases[-1][2].append(item)
        elif line.startswith("  ") and item is not None and line.strip():
            item[1] += " " + line.strip()
        elif not line.strip():
            item = None
    return releases


def plain(text):
    """Markdown code spans and links as plain text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "")


def entry_lines(items, bullet, indent):
    """An entry's items, each "Heading: text" wrapped at 78 columns under `bullet`."""
    out = []
    for heading, text in items:
        body = plain(f"{heading}: {text}" if heading else text)
        out.append(textwrap.fill(body, width=78, initial_indent=bullet, subsequent_indent=indent,
                                 break_on_hyphens=False) + "\n")
    return "".join(out)


def stamps(releases):
    """Each release's time: its day's midnight (UTC), plus a minute for each older release of that day."""
    out = []
    earlier_that_day = {}
    for _, date, _ in reversed(releases):
        n = earlier_that_day.get(date, 0)
        earlier_that_day[date] = n + 1
        out.append(datetime.datetime(date.year, date.month, date.day, tzinfo=datetime.timezone.utc) +
                   datetime.timedelta(minutes=n))
    return list(reversed(out))


def debian(releases, maintainer):
    out = []
    for (version, date, items), stamp in zip(releases, stamps(releases)):
        out.append(f"gpuscope ({version}) unstable; urgency=medium\n\n")
        out.append(entry_lines(items, "  * ", "    "))
        out.append(f"\n -- {maintainer}  {stamp.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n\n")
    return "".join(out)


def rpm(releases, maintainer):
    out = []
    for version, date, items in releases:
        out.append(f"* {date.strftime('%a %b %d %Y')} {maintainer} - {version}\n")
        out.append(entry_lines(items, "- ", "  ") + "\n")
    return "".join(out).rstrip("\n") + "\n"


def main(argv):
    if len(argv) != 6 or argv[1] not in ("debian", "rpm"):
        sys.stderr.write(__doc__)
        return 2
    kind, source, version, maintainer, target = argv[1:]
    with open(source, encoding="utf-8") as f:
        releases = parse(f.read())
    if not releases:
        sys.stderr.write(f"changelog.py: {source} has no '## X.Y.Z - YYYY-MM-DD' section\n")
        return 1
    if releases[0][0] != version:
        sys.stderr.write(
            f"changelog.py: the newest section of {source} is {releases[0][0]}, the package is {version}: "
            "add a section for this version\n")
        return 1
    if not releases[0][2]:
        sys.stderr.write(f"changelog.py: the {version} section of {source} lists no change\n")
        return 1
    text = debian(releases, maintainer) if kind == "debian" else rpm(releases, maintainer)
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
