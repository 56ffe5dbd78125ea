"""The caller's autocast and the script's gradients, for `fxlens minify`'s capture run.

A graph compiled under `with torch.autocast(...)` is traced for that autocast (Dynamo guards on
it), and a script differentiates after the block: `autocast_state` records the autocast with each
captured graph, so candidates and the reproducer run their forwards inside it and their backwards
after it (`fxlens.minify.check`). `grad_references` and `grad_failure` find a graph whose outputs
are right and whose gradients are not (a backend bug in the backward only), with the checks
`fxlens bisect` runs (`fxlens.bisect.check`: gradients taken with autocast off).
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


def grad_references(gm, args: list, lifted: list):
    """Eager references of a graph call for its gradients (run before the compiled call, which may
    mutate its inputs), or None when nothing would be differentiated: grad mode off, no input
    requiring grad, an attribute of the graph requiring grad (lifted copies: no gradient to compare
    reaches them), or eager raising."""
    import torch

    from fxlens.bisect.check import references

    def wants_grad(a):
        return isinstance(a, torch.Tensor) and a.requires_grad

    if not torch.is_grad_enabled() or not any(map(wants_grad, args)) or any(map(wants_grad, lifted)):
        return None
    try:
        return references(gm, [*args, *lifted])
    except Exception:  # eager raises, or the copies cannot be made: no gradient check
        return None


def grad_failure(args: list, result, refs) -> str | None:
    """An `AccuracyError` signature when a gradient of the compiled call's inputs is farther from
    fp64 than the accuracy rule allows (outputs are judged by the caller), else None."""
    from fxlens.bisect.check import compare_result

    try:
        divs = compare_result(list(args), result, refs, check_grads=True)
    except Exception:  # outputs that cannot be differentiated: best effort, as the output check
        return None
    bad = [d for d in divs if not d.ok and d.what.startswith("grad")]
    if not bad:
        return None
    d = bad[0]
    return (
        f"AccuracyError: {d.what} ({d.dtype}) max abs err {d.max_abs_err:.3g} vs fp64"
        f" (eager: {d.eager_abs_err:.3g})"
    )
