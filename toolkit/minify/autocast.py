"""The caller's autocast and the script's gradients, for `fxlens minify`'s capture run.

A graph compiled under `with torch.autocast(...)` is traced for that autocast (Dynamo guards on
it), and a script differentiates after the block: `autocast_state` records the autocast with each
captured graph, so candidates and the reproducer run their forwards inside it and their backwards
after it (`fxlens.minify.candidate_check`). `grad_references` and `grad_failure` find a graph whose outputs
are right and whose gradients are not (a backend bug in the backward only), with the accuracy
rule the reproducer applies (`fxlens.capture.accuracy`), taken with autocast off as `fxlens bisect`
takes them.
"""

from __future__ import annotations


def autocast_state() -> str:
    """The autocast in effect, as "device:dtype" ("cpu:bfloat16"), or "" when none is."""
    import torch

    for device in ("cpu", "cuda"):
        try:
            if torch.is_autocast_enabled(device):
                return f"{device}:{str(torch.get_autocast_dtype(device)).removeprefix('torch.')}"
        except (RuntimeError, TypeError, AttributeError):  # a torch without per-device autocast state
            continue
    return ""


def _copies(args: list, fp64: bool) -> list:
    """Detached copies of a call's inputs (floating ones fp64 with `fp64`), grad flags kept."""
    import torch

    out = []
    for a in args:
        if not isinstance(a, torch.Tensor):
            out.append(a)
            continue
        c = a.detach().to(torch.float64).clone() if fp64 and a.is_floating_point() else a.detach().clone()
        out.append(c.requires_grad_(True) if a.requires_grad and c.is_floating_point() else c)
    return out


def grad_references(gm, args: list, lifted: list):
    """Eager runs of a graph call on copies of its inputs, in their dtypes and in fp64, and a third
    copy for the compiled probe (all taken before the compiled call, which may mutate its inputs):
    `[(inputs, outputs), (inputs64, outputs64), probe_inputs]`, or None when nothing would be differentiated (grad mode off, no input requiring grad, an attribute
    of the graph requiring grad: lifted copies no gradient reaches) or eager raises."""
    import torch

    def wants_grad(a):
        return isinstance(a, torch.Tensor) and a.requires_grad

    if not torch.is_grad_enabled() or not any(map(wants_grad, args)) or any(map(wants_grad, lifted)):
        return None
    runs = []
    try:
        for fp64 in (False, True):
            inputs = _copies(args, fp64)
            with torch.random.fork_rng(devices=[]):
                runs.append((inputs, gm(*inputs, *_copies(lifted, fp64))))
    except Exception:  # eager raises, or fp64 cannot run: no gradient check
        return None
    return [*runs, _copies(args, False)]


def _grads(inputs: list, outputs) -> list:
    """Gradients of sum(outputs) at the inputs that require grad (zeros where unused), taken with
    autocast off as a script's backward after its autocast block; the graph is kept for the
    script's own backward."""
    import contextlib

    import torch

    from fxlens.capture.accuracy import flat_tensors

    outs = [o for o in flat_tensors(outputs) if o.requires_grad and o.is_floating_point()]
    wrt = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if not outs or not wrt:
        return []
    with contextlib.ExitStack() as stack:
        for device in ("cpu", "cuda"):
            if torch.is_autocast_enabled(device):
                stack.enter_context(torch.autocast(device_type=device, enabled=False))
        got = torch.autograd.grad([o.float().sum() for o in outs], wrt, retain_graph=True, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(wrt, got, strict=True)]


def grad_failure(call, refs) -> str | None:
    """An `AccuracyError` signature when the gradients of a compiled call's inputs diverge from
    fp64 more than eager's do (minify's accuracy rule, `fxlens.capture.accuracy`), else None.

    `call(inputs)` calls the compiled graph: once more, after the user's call (whose outputs and
    autograd graph stay the script's alone), on the probe copies, under the caller's autocast."""
    import torch

    from fxlens.capture.accuracy import accuracy_failure

    try:
        (eager_in, eager_out), (in64, out64), probe = refs
        with torch.random.fork_rng(devices=[]):
            compiled = _grads(probe, call(probe))
        eager, ref64 = _grads(eager_in, eager_out), _grads(in64, out64)
    except Exception:  # outputs that cannot be differentiated: best effort, as the output check
        return None
    if not compiled or len(compiled) != len(eager):
        return None
    why = accuracy_failure(ref64, eager, compiled)
    return why and why.replace("compiled output", "compiled gradient", 1)
