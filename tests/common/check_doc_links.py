#!/usr/bin/env python3
"""check_doc_links.py ROOT [FILE.md...]: every relative link in the given
Markdown files (default: README.md, docs/*.md, tests/README.md under ROOT)
must name a file or directory that exists, and a '#anchor' must name a
heading of the target file, spelt as GitHub spells heading anchors.
Links to other sites (http:, https:, mailto:) are not followed.  Prints one
line per broken link (FILE:LINE: target: why) and exits 1 if there is any.
"""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(lines):
    """The lines with fenced blocks blanked (line numbers kept)."""
    out, fenced = [], False
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def slug(text):
    """GitHub's anchor for a heading: markup dropped, lower case, spaces to
    '-', punctuation other than '-' and '_' removed."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, names = {}, set()
        with open(path, encoding="utf-8") as f:
            for line in strip_code(f.read().split("\n")):
                m = HEADING.match(line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                names.add(base if n == 0 else "%s-%d" % (base, n))
        _anchors[path] = names
    return _anchors[path]


def check(path, root):
    bad = []
    with open(path, encoding="utf-8") as f:
        lines = strip_code(f.read().split("\n"))
    for lineno, line in enumerate(lines, 1):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                    if file_part else path)
            rel = os.path.relpath(path, root)
            if not os.path.exists(dest):
                bad.append("%s:%d: %s: no such file" % (rel, lineno, target))
                continue
            if anchor:
                if os.path.isdir(dest) or not dest.endswith(".md"):
                    bad.append("%s:%d: %s: an anchor into a file that is not Markdown"
                               % (rel, lineno, target))
                elif anchor not in anchors(dest):
                    bad.append("%s:%d: %s: no heading with that anchor in %s"
                               % (rel, lineno, target, os.path.relpath(dest, root)))
    return bad


def main(argv):
    if len(argv) < 2:
        print("usage: check_doc_links.py ROOT [FILE.md...]", file=sys.stderr)
        return 2
    root = argv[1]
    files = argv[2:] or ([os.path.join(root, "README.md")]
                         + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
                         + [os.path.join(root, "tests", "README.md")])
    bad = []
    for path in files:
        bad += check(path, root)
    for line in bad:
        print(line)
    if bad:
        print("%d broken link(s)" % len(bad))
        return 1
    print("links resolve in %d file(s)" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
