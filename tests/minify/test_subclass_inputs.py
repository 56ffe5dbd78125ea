"""Issue 34: minify saves any input torch can save, tensor subclasses included, or says why not.

Ground truth: torch itself. torch.save of a script's own subclass writes a file that
torch.load(weights_only=True) refuses (UnpicklingError: the class is not an allowed global), which
is what ended minify in "internal error"."""

import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.testing._internal.two_tensor import TwoTensor  # noqa: E402

from fxlens.minify import capture  # noqa: E402

SCRIPTS = Path(__file__).parent / "scripts"


class Tagged(torch.Tensor):
    pass


def test_subclass_inputs_are_saved_as_data_or_refused_with_a_reason(tmp_path):
    tagged = torch.arange(6.0).as_subclass(Tagged)
    torch.save(tagged, tmp_path / "raw.pt")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tmp_path / "raw.pt", weights_only=True)
    two = TwoTensor(torch.ones(3), torch.zeros(3))
    unsaved = capture._save_values(tmp_path, 0, [tagged, 2, two], [torch.ones(2)])
    values = torch.load(tmp_path / "values_0.pt", weights_only=True)
    assert sorted(values) == ["arg0", "arg3"]
    assert type(values["arg0"]) is torch.Tensor and torch.equal(values["arg0"], torch.arange(6.0))
    assert (
        list(unsaved) == ["arg2"] and "TwoTensor" in unsaved["arg2"] and "wrapper subclass" in unsaved["arg2"]
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["plain", "wrapper"])
def test_minify_reduces_a_graph_with_subclass_inputs(minify_env, tmp_path, kind):
    """~40 s each: the capture saves (or refuses) the subclass input and the reduction goes on."""
    import json
    import subprocess
    import sys

    out = tmp_path / "minify.json"
    args = ["wrapper"] if kind == "wrapper" else []
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fxlens.cli",
            "minify",
            "--json",
            str(out),
            SCRIPTS / "subclass_input.py",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert "internal error" not in proc.stderr
    result = json.loads(out.read_text())
    assert result["final_nodes"] == 1 and "ReluCompileError" in result["signature"]
    if kind == "wrapper":
        assert "TwoTensor" in result["values_unsaved"].get("arg0", "")
    else:
        assert result["values_unsaved"] == {}
