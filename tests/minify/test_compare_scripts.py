"""`fxlens minify` on a script that compares a backend with `eager` itself (issue 12.2).

Ground truth: scripts/compare.py exits 1 through its own assert_close; its custom backend is wrong
only on the graph holding sigmoid. The reproducer must hold that graph alone, compiled with the
script's backend and compared with the script's reference call (`eager`), and fail the same way in
a fresh interpreter.
"""

import json

import pytest

from .conftest import SCRIPTS, run_fresh

# the script bisect's tests compare with (one copy for both)
COMPARE = SCRIPTS.parents[1] / "bisect" / "scripts" / "compare.py"


def test_backend_loader_skips_a_bug_reports_top_level_code(tmp_path):
    from fxlens.minify.repro_writer import backend_loader

    namespace: dict = {}
    exec(backend_loader(f"{COMPARE}:scaled_backend"), namespace)
    # loading the backend did not run the script's failing assert_close
    assert namespace["load_backend"]().__name__ == "scaled_backend"


@pytest.mark.slow
def test_minify_keeps_the_reference_comparison(minify_env, tmp_path):
    from fxlens.minify.command import minify_script

    out = tmp_path / "repro.py"
    r = minify_script(str(COMPARE), [], out=str(out), progress=False)
    assert r["backend"] == f"{COMPARE}:scaled_backend"
    assert r["reproduced"] == "3/3" and r["final_nodes"] == 1
    text = out.read_text()
    assert "REFERENCE = 'eager'" in text and "torch.sigmoid" in text and "torch.relu" not in text
    code, sig = run_fresh(out)
    assert (code, sig) == (1, r["signature"])
    assert json.dumps(r)  # the --json dict stays serialisable
