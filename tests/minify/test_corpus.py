"""Every script in repro_cases/ runs in a fresh interpreter with the outcome its header promises.

Header lines read here (written by `fxlens minify`, or by hand for curated cases):
`# expect: exit 1, fxlens-signature: SIG`, `# expect: exit 0`, `# expect: killed by SIGSEGV`;
`# corpus: slow` marks a case that is only run with `-m slow` (e.g. inductor's C++ compiles).
"""

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "repro_cases"
CASES = sorted(p for p in CORPUS.glob("*.py") if "# expect:" in p.read_text())


def _expect(path: Path) -> str:
    m = re.search(r"^# expect: (.+)$", path.read_text(), re.M)
    assert m, f"{path.name} has no '# expect:' header line"
    return m.group(1).strip()


def _param(p: Path):
    slow = "# corpus: slow" in p.read_text()
    return pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if slow else [])


def test_corpus_is_curated():
    assert len(CASES) >= 8
    kinds = {_expect(p).split(",")[0] for p in CASES}
    assert {"exit 0", "exit 1"} <= kinds


@pytest.mark.parametrize("path", [_param(p) for p in CASES])
def test_corpus_case(path, tmp_path):
    expect = _expect(path)
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    if expect.startswith("killed by "):
        assert proc.returncode < 0, proc.stderr[-2000:]
        assert signal.Signals(-proc.returncode).name == expect.removeprefix("killed by ")
        return
    code, _, rest = expect.partition(",")
    assert proc.returncode == int(code.removeprefix("exit ")), proc.stderr[-2000:]
    if rest.strip().startswith("fxlens-signature: "):
        sig = rest.strip().removeprefix("fxlens-signature: ")
        printed = [ln for ln in proc.stderr.splitlines() if ln.startswith("fxlens-signature: ")]
        assert printed and printed[-1].removeprefix("fxlens-signature: ") == sig, proc.stderr[-2000:]
