"""Run a planted memory script in this (fresh) process, then measure one of its compiled functions
the way doctor's probe does, and print JSON: the measurement and a by-hand count to check it by.

`python memdriver.py SCRIPT NAME [backward] [no_grad] [dynamic] [config:NAME=JSON]...`: NAME is the
compiled object's global name in SCRIPT, and the eager object is the one torch.compile was given
(`_orig_mod` or `__wrapped__`). A fix to measure: `config:functorch.activation_memory_budget=0.5`
is applied the way `fxlens fix` applies a config action (fxlens.fix.child), `dynamic` compiles
with `dynamic=True` what the script compiles (what fix's `dynamic` applier does through its hook).
"""

import json
import runpy
import sys

import torch

from fxlens.probe.memprobe import measure


def by_hand_saved(fn, args, skip) -> int:
    """Bytes of distinct storages autograd saves for backward, `skip` storages left out."""
    seen = {}

    def pack(t):
        try:
            seen.setdefault(t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        except NotImplementedError:
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return sum(n for p, n in seen.items() if p not in skip)


def apply_fixes(flags: list[str]) -> None:
    """The fixes named on the command line, applied before the script runs."""
    from fxlens.fix.child import _at_start

    actions = []
    for flag in flags:
        if flag.startswith("config:"):
            name, _, value = flag[len("config:") :].partition("=")
            actions.append({"kind": "config", "params": {"name": name, "value": json.loads(value)}})
    notes: dict = {}
    _at_start(actions, {}, notes)
    assert not notes, notes
    if "dynamic" in flags:
        real = torch.compile

        def dynamic(model=None, **options):
            options["dynamic"] = True
            return real(model, **options) if model is not None else real(**options)

        torch.compile = dynamic


def main() -> None:
    script, name = sys.argv[1], sys.argv[2]
    backward = "backward" in sys.argv[3:]
    apply_fixes(sys.argv[3:])
    g = runpy.run_path(script, run_name="__main__")
    compiled = g[name]
    eager = getattr(compiled, "_orig_mod", None) or getattr(compiled, "__wrapped__", None)
    args = tuple(g["ARGS"]) if "ARGS" in g else ()
    # the grad mode the script called it in (another would recompile: Dynamo guards on it)
    grad = torch.no_grad() if "no_grad" in sys.argv[3:] else torch.enable_grad()
    with grad:
        out = measure(eager, compiled, args, {}, backward=backward)
        hand = {}
        if backward:
            skip = {p.untyped_storage().data_ptr() for p in eager.parameters()}
            skip |= {a.untyped_storage().data_ptr() for a in args}
            hand = {
                "eager": by_hand_saved(eager, args, skip),
                "compiled": by_hand_saved(compiled, args, skip),
            }
    extra = {k: g[k]() for k in ("EXPECT",) if k in g}
    print(json.dumps({"memory": out, "by_hand_saved": hand, **extra}))


if __name__ == "__main__":
    main()
