"""What eager does on the very call a compiled graph gets: raise (which exception) or return.

A compiled graph is correct when it behaves as eager does on the same inputs, and raising is a
behaviour: `binary_cross_entropy` with a target outside [0, 1] raises in eager, so a stage that
raises the same `RuntimeError` is right and a stage that returns a value is wrong
(pytorch/pytorch#193757). The wrapper backend (`fxlens.bisect.backend`) asks this module what
eager did before (and, when the compiled call raised first, after) each checked call, and records
the comparison; `fxlens.bisect.runs` turns the records into the run's verdict.

Runs in the child process (imports torch lazily).
"""

from __future__ import annotations

import copy


def exception_line(e: BaseException) -> str:
    """`Type: first line of the message`, as runs and verdicts quote an exception."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")[:500]


def same_exception(a: BaseException | None, b: BaseException | None) -> bool:
    """Same exception type (module and name) and same message: what "raises as eager does" means.

    The message is compared whole: `index 1 is out of bounds` and `index 2 is out of bounds` are
    different behaviours of the same check, and a stage that names the wrong index is wrong.
    """
    if a is None or b is None:
        return False
    ta, tb = type(a), type(b)
    return (ta.__module__, ta.__qualname__) == (tb.__module__, tb.__qualname__) and str(a) == str(b)


def pristine(gm):
    """A copy of the Dynamo graph that no backend can rewrite (some rewrite `gm.graph` in place,
    torch's relu_*_TESTING_ONLY switches do), sharing the module's weights: copying those would
    double the model's memory just to ask whether eager raises."""
    import torch

    try:
        return torch.fx.GraphModule(gm, copy.deepcopy(gm.graph), class_name=type(gm).__name__)
    except Exception:  # an exotic graph module: the original (its code is what eager runs anyway)
        return gm


def eager_raises(gm, args) -> BaseException | None:
    """The exception eager raises on copies of `args` (the originals untouched, the user's RNG
    state unchanged), or None when eager returns a value."""
    import torch

    from fxlens.bisect.fp64_compare import copy_args

    copies = copy_args(list(args))
    with torch.random.fork_rng(devices=[]):
        try:
            gm(*copies)
        except Exception as e:
            return e
    return None


def compare_raise(eager: BaseException | None, compiled: BaseException | None, stage: str) -> str | None:
    """None when the compiled call behaved as eager did; else the sentence that says how not.

    Examples: "eager raises RuntimeError: all elements of target should be between 0 and 1,
    aot_eager_decomp_partition returns a value"; "eager returns a value, inductor raises ...".
    """
    if compiled is None and eager is None:
        return None
    if compiled is None:
        return f"eager raises {exception_line(eager)}, {stage} returns a value"
    if eager is None:
        return f"eager returns a value, {stage} raises {exception_line(compiled)}"
    if same_exception(eager, compiled):
        return None
    return f"eager raises {exception_line(eager)}, {stage} raises {exception_line(compiled)}"
