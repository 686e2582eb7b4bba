"""What the scripts that test the jsonlw command (tests/tools/*_test.py) share: named checks
printed as they run, and the exit status they add up to. A script imports it from its own
folder (Python puts that first on sys.path)."""

import sys

failures = []


def expect(name, cond, detail=""):
    """Prints "ok   <name>" or "FAIL <name>: <detail>"; finish() counts the failures."""
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"))
    if not cond:
        failures.append(name)


def finish():
    """Says how many checks failed and exits: 1 if any did, else 0."""
    print(f"\n{len(failures)} failed")
    sys.exit(1 if failures else 0)
