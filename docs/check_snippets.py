#!/usr/bin/env python3
"""Checks that every C++ code block in README.md and docs/*.md is a file the build compiles.

Each ```cpp block must be preceded by a marker naming its file, relative to the page:

    <!-- snippet: snippets/embedding_1.cpp -->
    ```cpp
    ...the file's exact text...
    ```

The block must equal the file byte for byte (one trailing newline aside), and every file under
docs/snippets/ must be shown by some page. `--fix` rewrites the blocks from the files instead.

Usage: check_snippets.py [--root DIR] [--fix]      (DIR: the repository root; default: ..)
"""
import argparse
import pathlib
import re
import sys

MARKER = re.compile(r"^<!--\s*snippet:\s*(\S+)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^```(cpp|c\+\+|cxx)\s*$")


def pages(root):
    yield root / "README.md"
    yield from sorted((root / "docs").glob("*.md"))


def check_page(page, fix):
    """Returns (errors, files shown, new text or None)."""
    errors, shown = [], set()
    lines = page.read_text(encoding="utf-8").split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not FENCE_OPEN.match(line):
            out.append(line)
            i += 1
            continue
        start = i
        end = start + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            errors.append(f"{page}:{start + 1}: unterminated code block")
            return errors, shown, None
        body = "\n".join(lines[start + 1:end])
        prev = next((l for l in reversed(out) if l.strip()), "")
        m = MARKER.match(prev)
        if not m:
            errors.append(f"{page}:{start + 1}: C++ block without a "
                          "'<!-- snippet: FILE -->' line before it")
            out.extend(lines[start:end + 1])
        else:
            target = (page.parent / m.group(1)).resolve()
            shown.add(target)
            if not target.is_file():
                errors.append(f"{page}:{start + 1}: {m.group(1)} does not exist")
                out.extend(lines[start:end + 1])
            else:
                want = target.read_text(encoding="utf-8").rstrip("\n")
                if body.rstrip("\n") != want:
                    if not fix:
                        errors.append(f"{page}:{start + 1}: block differs from {m.group(1)} "
                                      "(run docs/check_snippets.py --fix)")
                    out.append(line)
                    out.extend(want.split("\n") if fix else lines[start + 1:end])
                    out.append(lines[end])
                else:
                    out.extend(lines[start:end + 1])
        i = end + 1
    return errors, shown, "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parent.parent)
    ap.add_argument("--fix", action="store_true", help="rewrite blocks from their files")
    args = ap.parse_args()
    root = args.root.resolve()

    errors, shown = [], set()
    for page in pages(root):
        if not page.is_file():
            errors.append(f"{page}: missing")
            continue
        e, s, text = check_page(page, args.fix)
        errors += e
        shown |= s
        if args.fix and text is not None and text != page.read_text(encoding="utf-8"):
            page.write_text(text, encoding="utf-8")
            print(f"rewrote {page.relative_to(root)}")
    for f in sorted((root / "docs" / "snippets").glob("*.cpp")):
        if f.resolve() not in shown:
            errors.append(f"{f}: not shown by any page (add a marker and a block, or delete it)")

    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"docs-snippets: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"docs-snippets: {len(shown)} snippet file(s) match their blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
