#!/usr/bin/env bash
# ci/compat.sh VERSION [VENV]: run the capture, report, bisect and minify tests under torch==VERSION.
#
# Makes (or reuses) a virtual environment with that torch, installs fxlens into it editable with the
# dev extra, and runs the four test folders the way .ci/run runs the whole suite. The result line
# (passed/failed/skipped and the failed tests' names) goes to stdout and to
# .compat/VERSION.txt; docs/compat.md records the latest results. CI keeps torch 2.13.0 (.ci/run);
# this is for checking another release by hand or in a scheduled job.
#
#   ci/compat.sh 2.15.0                      # venv at .venv-compat-2.15.0
#   ci/compat.sh 2.14.1 /work/venv-2.14      # reuse a venv that already has that torch
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:?usage: ci/compat.sh VERSION [VENV]}
VENV=${2:-.venv-compat-$VERSION}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
# torch first and pinned, so the dev extra's resolution never swaps it for another build
if [ "$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$VERSION" ]; then
    "$PY" -m pip install -q "torch==$VERSION"
fi
"$PY" -m pip install -q -e '.[dev]'
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
mkdir -p .compat
set +e
"$PY" -m pytest -q -n 2 --dist worksteal -p no:cacheprovider \
    --junitxml ".compat/$VERSION.xml" tests/capture tests/report tests/bisect tests/minify
rc=$?
set -e
"$PY" - "$VERSION" <<'PY'
import sys
import xml.etree.ElementTree as ET

version = sys.argv[1]
root = ET.parse(f".compat/{version}.xml").getroot()
cases = list(root.iter("testcase"))
failed = [f"{c.get('classname')}::{c.get('name')}" for c in cases if c.find("failure") is not None or c.find("error") is not None]
skipped = sum(c.find("skipped") is not None for c in cases)
line = f"torch {version}: {len(cases) - len(failed) - skipped} passed, {len(failed)} failed, {skipped} skipped"
text = "\n".join([line, *(f"  FAILED {name}" for name in failed)]) + "\n"
open(f".compat/{version}.txt", "w").write(text)
print(text, end="")
PY
exit $rc
