"""Saved tensors are named with the files this run executed, not those of the run that filled
inductor's cache: on an AOTAutograd cache hit torch logs the cached forward graph, whose `# File:`
comments name the first run's copy of the script."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxlens.doctor.memcauses import _aot_graphs
from fxlens.doctor.savedgraph import rebase_files
from fxlens.trace.graph_code import FILE_COMMENT
from fxlens.trace.session import Session

SCRIPT = Path(__file__).parent / "scripts" / "mem_saved.py"

DYNAMO = """
        # File: /work/b/train.py:15 in forward, code: h = self.proj(x)
        linear = torch._C._nn.linear(l_x_, w, b)
"""
AOT = """
        # File: /tmp/a/train.py:15 in forward, code: h = self.proj(x)
        addmm = torch.ops.aten.addmm.default(primals_2, primals_3, permute)
        # File: /tmp/a/helpers.py:3 in scale, code: return y * 2
        mul = torch.ops.aten.mul.Tensor(addmm, 2)
"""


def test_rebase_files_names_this_runs_file_when_line_and_code_agree():
    out = rebase_files(AOT, [DYNAMO])
    assert "# File: /work/b/train.py:15 in forward, code: h = self.proj(x)" in out
    # no file of this run has that line: left as it was (never guessed)
    assert "# File: /tmp/a/helpers.py:3 in scale" in out
    assert rebase_files(AOT.replace("self.proj(x)", "self.other(x)"), [DYNAMO]).count("/tmp/a/") == 2


def _files(code: str) -> set[str]:
    return {m["file"] for ln in code.split("\n") if (m := FILE_COMMENT.match(ln))}


@pytest.mark.slow  # two inductor runs of a training step (~1 min each here)
def test_a_cache_hit_from_another_folder_names_this_runs_script(tmp_path):
    cache = tmp_path / "cache"
    text = SCRIPT.read_text().replace('backend="aot_eager"', 'backend="inductor"')
    for side in ("first", "second"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.py").write_text(text)
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "TORCH_TRACE": str(tmp_path / side / "t")}
        subprocess.run([sys.executable, "train.py"], cwd=tmp_path / side, env=env, check=True, timeout=900)
    session = Session.open(tmp_path / "second" / "t")
    cid = list(session.ranks[0].by_compile)[0]
    raw = session.artifact(cid, "aot_forward_graph")
    first, second = str(tmp_path / "first" / "train.py"), str(tmp_path / "second" / "train.py")
    assert _files(raw) == {first}  # the cache hit: torch's record names the first run's copy
    (fw, _bw), *_ = _aot_graphs(session)
    assert _files(fw) == {second}
