"""A stage's verdict compares each compiled call with what eager did on the same call.

In-process: the wrapper backend compiles the report scripts' functions with one stage, and the
run's verdict (`read_outcome`) is checked against ground truth established by hand on the same
call: eager's exception vs `torch.compile(fn, backend=stage)`'s, without fxlens.
"""

import itertools

import pytest

torch = pytest.importorskip("torch")

from fxlens import config  # noqa: E402
from fxlens.bisect import backend as wrapper_mod  # noqa: E402
from fxlens.bisect.eager_call import compare_raise, same_exception  # noqa: E402
from fxlens.bisect.runs import read_outcome  # noqa: E402
from fxlens.trace.session import write_info  # noqa: E402


def bce(t):  # pytorch/pytorch#193757: the decomposition has no target range check
    return torch.nn.functional.binary_cross_entropy(torch.ones_like(t), t)


def bernoulli(p):  # pytorch/pytorch#185246: the decomposition has no probability range check
    return torch.bernoulli(p)


def cholesky(a):  # raises torch.linalg.LinAlgError at every stage (ATen everywhere)
    return torch.linalg.cholesky(a * 2 - 1)


CASES = {
    "bce": (bce, lambda: [torch.ones(4, 4) * 1.5]),
    "bernoulli": (bernoulli, lambda: [torch.full((16,), 2.0)]),
    "cholesky": (cholesky, lambda: [torch.zeros(4, 4)]),
}
STAGES = ("eager", "aot_eager", "aot_eager_decomp_partition", "fxlens_eager", "fxlens_aot_eager")


def _call(fn, args):
    """(exception or None) of one call: the ground truth."""
    try:
        fn(*args)
    except Exception as e:
        return e
    return None


def _by_hand(name: str, stage: str):
    """What eager and `torch.compile(backend=stage)` do on the call, without fxlens."""
    fn, make = CASES[name]
    torch._dynamo.reset()
    eager = _call(fn, make())
    compiled = _call(torch.compile(fn, backend=stage), make())
    torch._dynamo.reset()
    return eager, compiled


def _under_wrapper(tmp_path, monkeypatch, name: str, stage: str, check: str):
    """The call under fxlens bisect's wrapper with `stage`, as a script that catches the error
    would make it; the run's Outcome (exit status 0: the script survived)."""
    fn, make = CASES[name]
    write_info(tmp_path, {"command": "run"})
    monkeypatch.setenv("FXLENS_SESSION", str(tmp_path))
    monkeypatch.setenv(config.ENV_BISECT_STAGE, stage)
    monkeypatch.setenv(config.ENV_BISECT_GOOD, "")
    monkeypatch.setenv(config.ENV_BISECT_CHECK, check)
    monkeypatch.setattr(wrapper_mod, "_ordinals", itertools.count())  # a run's first graph is #0
    torch._dynamo.reset()
    try:
        _call(torch.compile(fn, backend=wrapper_mod.wrapper), make())
    finally:
        torch._dynamo.reset()
    return read_outcome(1, stage, tmp_path, 0, 0.0)


@pytest.mark.parametrize("check", ["crash", "auto"])
@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_stage_fails_exactly_when_it_does_not_do_what_eager_does(tmp_path, monkeypatch, name, stage, check):
    eager, compiled = _by_hand(name, stage)
    assert eager is not None  # every case raises in eager
    out = _under_wrapper(tmp_path, monkeypatch, name, stage, check)
    if same_exception(eager, compiled):
        assert out.kind is None and not out.failing, out
        assert out.as_eager == [0] and out.eager_raised[0].startswith(type(eager).__name__)
    elif compiled is None:
        assert out.kind == "no_raise" and out.failing == [0]
        assert out.error == out.mismatch == compare_raise(eager, None, stage)
        assert out.error.startswith(f"eager raises {type(eager).__name__}: ")
        assert out.error.endswith(f", {stage} returns a value")
    else:
        assert out.kind == "crash" and out.failing == [0]


def test_the_ground_truth_has_both_verdicts():
    # the parametrised test above must see passing and failing stages, or it checks one branch only
    seen = {
        (n, s): _by_hand(n, s)
        for n in ("bce", "cholesky")
        for s in ("aot_eager", "aot_eager_decomp_partition")
    }
    same = {k for k, (e, c) in seen.items() if same_exception(e, c)}
    assert same == {
        ("bce", "aot_eager"),
        ("cholesky", "aot_eager"),
        ("cholesky", "aot_eager_decomp_partition"),
    }


def test_compare_raise_wording():
    a, b = RuntimeError("x is bad"), RuntimeError("y is bad")
    assert compare_raise(a, RuntimeError("x is bad"), "s") is None
    assert compare_raise(None, None, "s") is None
    assert compare_raise(a, b, "s") == "eager raises RuntimeError: x is bad, s raises RuntimeError: y is bad"
    assert compare_raise(None, b, "s") == "eager returns a value, s raises RuntimeError: y is bad"
    assert not same_exception(IndexError("x is bad"), a)  # same message, other type
