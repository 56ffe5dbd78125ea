"""`check_spec`: the up-front refusal of backend specs that bisect, minify and doctor share."""

import pytest

from fxlens.capture.backends import check_spec, resolve
from fxlens.errors import FxlensError

SCRIPT = """
import torch
from torch._dynamo.backends.common import aot_autograd as make_aot
try:
    import numpy
    def in_try(gm, inputs):
        return gm
except ImportError:
    pass
if torch.cuda.is_available():
    def guarded(gm, inputs):
        return gm
class Backend:
    def __call__(self, gm, inputs):
        return gm
async def not_a_backend(gm, inputs):
    return gm
instance: Backend = Backend()
aliased = make_aot
def plain(gm, inputs):
    return gm
def _unused():
    never_top_level = 1
raise SystemExit("top-level code never runs when a spec is checked")
"""


@pytest.mark.parametrize(
    "attr", ["plain", "Backend", "instance", "aliased", "make_aot", "in_try", "guarded", "not_a_backend"]
)
def test_a_file_spec_is_accepted_for_every_top_level_definition(tmp_path, attr):
    path = tmp_path / "repro.py"
    path.write_text(SCRIPT)
    check_spec(f"{path}:{attr}")  # raises if refused; SystemExit if the file were run
    # and the child that resolves the spec finds it too, without running the top-level code
    if attr == "guarded":  # defined only where CUDA is: the static check cannot know
        with pytest.raises(FxlensError, match="defines no 'guarded'"):
            resolve(f"{path}:{attr}")
    else:
        assert callable(resolve(f"{path}:{attr}"))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("{path}:never_top_level", "defines no 'never_top_level'"),
        ("{path}:missing", "defines no 'missing'"),
        ("{tmp}/absent.py:plain", "no such file"),
        ("{tmp}/broken.py:plain", "broken.py line 1: "),
        ("no_such_module_xyz:fn", "No module named 'no_such_module_xyz'"),
        ("os.path:no_such_fn", "no_such_fn"),
        ("not_a_backend_name", "unknown backend 'not_a_backend_name' (known: "),
    ],
)
def test_a_spec_that_cannot_work_is_refused_in_one_line(tmp_path, spec, message):
    (tmp_path / "repro.py").write_text(SCRIPT)
    (tmp_path / "broken.py").write_text("def plain(:\n")
    with pytest.raises(FxlensError) as e:
        check_spec(spec.format(path=tmp_path / "repro.py", tmp=tmp_path))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_names_accepted_without_torch_are_the_ones_torch_resolves():
    # ALWAYS_KNOWN skips importing torch: each name must really be registered
    from fxlens.capture.backends import ALWAYS_KNOWN

    for name in ALWAYS_KNOWN:
        assert resolve(name) == name
