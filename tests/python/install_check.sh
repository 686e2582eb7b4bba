#!/usr/bin/env bash
# The Python package installed the way docs/python.md says: a venv over Debian's Python with
# its site packages, `pip install --no-build-isolation .` (meson-python, no PyPI), then the
# pytest suite against the installed copy (not the build tree). Run by .ci/run; a few minutes
# on 2 cores (meson-python builds the libraries again, release). Exit 77 (skip) without the
# Debian packages it needs.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.."
PY=${JSONLW_PYTHON:-/usr/bin/python3}
"$PY" -c 'import mesonpy, pytest, pytest_asyncio, venv' 2>/dev/null || {
    echo "install_check: $PY lacks meson-python, pytest or venv: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-build-isolation --no-index -q . >"$work/pip.log" 2>&1 || {
    tail -40 "$work/pip.log"; exit 1; }
# From outside the source tree, so `import jsonlw` can only find the installed copy.
cd "$work"
"$work/venv/bin/python" -c 'import jsonlw, jsonlw.trtllm, os; assert "site-packages" in jsonlw.__file__, jsonlw.__file__; print("installed:", jsonlw.__file__, jsonlw.__version__)'
cp -r "$OLDPWD/tests/python" "$work/tests"
cd "$work/tests"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider .
