"""Every script in repro_cases/ runs with the outcome its header promises.

By default each case is forked from one zygote per test worker that has imported torch, Dynamo,
inductor and fxlens's backend, but compiled nothing (`fxlens.minify.verify.Zygote`, the same
process `fxlens minify` re-runs its reproducers in): importing those took ~6 s of the ~7 s of a
case. `-m slow` also runs every case in a fresh interpreter, which catches a case that forgot an
import the zygote happened to have; the minify tests run each reproducer they write that way too.

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

from fxlens.minify.verify import Zygote

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


@pytest.fixture(scope="module")
def zygote():
    z = Zygote(["torch._dynamo", "torch._inductor.compile_fx", "fxlens.backend.compile_fx", "torch.testing"])
    yield z
    z.close()


def _check(path: Path, returncode: int, stderr: str) -> None:
    expect = _expect(path)
    if expect.startswith("killed by "):
        assert returncode < 0, stderr[-2000:]
        assert signal.Signals(-returncode).name == expect.removeprefix("killed by ")
        return
    code, _, rest = expect.partition(",")
    assert returncode == int(code.removeprefix("exit ")), stderr[-2000:]
    if rest.strip().startswith("fxlens-signature: "):
        sig = rest.strip().removeprefix("fxlens-signature: ")
        printed = [ln for ln in stderr.splitlines() if ln.startswith("fxlens-signature: ")]
        assert printed and printed[-1].removeprefix("fxlens-signature: ") == sig, stderr[-2000:]


@pytest.mark.parametrize("path", [_param(p) for p in CASES])
def test_corpus_case(path, tmp_path, zygote):
    ran = zygote.run(path, 1, timeout=600, cwd=tmp_path, stderr_dir=tmp_path)
    assert ran is not None, "the zygote died"
    ((code, stderr),) = ran
    _check(path, code, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in CASES])
def test_corpus_case_in_a_fresh_interpreter(path, tmp_path):
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    _check(path, proc.returncode, proc.stderr)


def test_forked_runs_draw_like_new_interpreters(zygote, tmp_path):
    # the re-runs that decide "reproduced 3/3" vs FLAKY must not agree because they share the
    # zygote's random state: Python's and numpy's numbers differ, torch's is its default seed's
    import torch

    script = tmp_path / "draws.py"
    script.write_text(
        "import random, sys, numpy, torch\n"
        "print(random.random(), numpy.random.random(), float(torch.rand(1)), file=sys.stderr)\n"
    )
    ran = zygote.run(script, 3, timeout=120, cwd=tmp_path, stderr_dir=tmp_path)
    assert ran is not None, "the zygote died"
    draws = [err.split() for code, err in ran if code == 0]
    assert len(draws) == 3, ran
    assert len({d[0] for d in draws}) == 3 and len({d[1] for d in draws}) == 3
    assert {float(d[2]) for d in draws} == {float(torch.rand(1, generator=torch.Generator()))}
