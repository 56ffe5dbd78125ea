"""How one bisect run's records read as a judgment (split out of `fxlens.bisect.runs`): which
check events count (gradients only where the script differentiated), how a divergence and a run
are said, and whether a failing comparison with eager is one the compiled value wins.
Pure functions of the wrapper's event dicts; never imports torch.
"""

from __future__ import annotations


def forward_only(ev: dict, backward: set) -> dict:
    """A check event judged on what the script used: its gradient divergences count only when the
    script's backward reached that call's outputs (a forward-only script never sees gradients)."""
    if ev.get("phase") != "check" or ev.get("ok") is not False:
        return ev
    if (ev.get("ordinal"), ev.get("call")) in backward:
        return ev
    divs = ev.get("divergences") or []
    grads = [d for d in divs if str(d.get("what", "")).startswith("grad")]
    if not grads:
        return ev
    outputs = [d for d in divs if d not in grads]
    # gradients nothing differentiated through are no verdict: the outputs decide alone
    ok = all(d.get("ok", True) for d in outputs)
    return {**ev, "ok": ok, "divergences": outputs, "unused_grads": grads}


def closer_than_eager(ev: dict) -> dict | None:
    """The output of a check event whose value differs from eager's while passing the fp64 rule
    (the compiled code kept more precision, e.g. an fp16 add done in fp32): a script comparing
    with eager sees a difference no compiler is bound to avoid. `closer_to_fp64` says whether it
    is strictly the nearer of the two."""
    if ev.get("minify_rule") and not ev.get("semantics"):
        return None  # minify's accuracy rule sees a divergence: an accuracy bug to reduce
    for d in ev.get("divergences") or []:
        if d.get("vs_eager", 0) > 0 and d.get("ok"):
            closer = d.get("max_abs_err", 0) < d.get("eager_abs_err", 0)
            return {
                **d,
                "closer_to_fp64": closer,
                "compile_id": ev.get("compile_id"),
                "stage": ev.get("stage"),
                # eager rounds a Python scalar the compiled graph keeps (`fxlens.bisect.semantics`)
                "semantics": ev.get("semantics"),
            }
    return None


def divergence_line(d: dict) -> str:
    dtype = str(d.get("dtype", ""))
    if "(eager: " in dtype:  # a wrong dtype (`fxlens.bisect.fp64_compare.compare`), whatever the values
        got, _, eager = dtype.partition(" (eager: ")
        return f"{d.get('what', 'output')} has dtype {got} where eager's has {eager.rstrip(')')}"
    return (
        f"{d.get('what', 'output')} ({d.get('dtype', '')}) max abs err {d.get('max_abs_err', 0):.3g} "
        f"vs fp64 (eager: {d.get('eager_abs_err', 0):.3g})"
    )


def run_verdict(out, width: int = 110) -> str:
    """`ok`, or `FAILS (kind: error)` with the error cut to fit `width`, never the parenthesis."""
    if not out.failed:
        return "ok"
    head = f"FAILS ({out.kind}: "
    error = " ".join(str(out.error).split())
    room = max(width - len(head) - 1, 10)
    if len(error) > room:
        error = error[: room - 1].rstrip() + "…"
    return f"{head}{error})"
