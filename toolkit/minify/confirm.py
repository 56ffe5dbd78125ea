"""Step 2 of `fxlens minify`: a captured graph, compiled alone, fails how and under which spec?

`load_candidate` turns a captured graph back into a reducible candidate (with its recorded
inputs); `base_spec` is the reproducer's spec for it; `confirm` runs it a few times at once on the
worker pool, cheapest options first, and answers the spec it fails under, its signature (the
script's own preferred) and whether it is flaky.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from fxlens.errors import FxlensError
from fxlens.minify.child import reference_backend


def load_candidate(cap: Path, k: int):
    """Graph k as saved by the capture: (meta, recorded values' path, reducible candidate)."""
    from fxlens.minify.graph import InputSpec, candidate_from_module, load_graph_module

    meta = json.loads((cap / f"graph_{k}.json").read_text())
    values_path = cap / f"values_{k}.pt"
    specs = [InputSpec.from_json(s) for s in meta["inputs"]]
    values = _load_values(values_path) if values_path.exists() else {}
    # an input whose values were not saved (a wrapper tensor subclass: meta["unsaved"] says why)
    # runs on random values of its meta, and the reproducer draws them too
    missing = {i for i, s in enumerate(specs) if s.is_tensor and f"arg{i}" not in values}
    example = [
        _random_like(s) if i in missing else _restore(values.get(f"arg{i}"), s) for i, s in enumerate(specs)
    ]
    try:
        cand = candidate_from_module(load_graph_module((cap / f"graph_{k}.py").read_text()), example)
        cand.inputs = [replace(s, saved=None) if i in missing else s for i, s in enumerate(cand.inputs)]
    except Exception as e:  # a graph fx cannot re-trace or run (higher-order ops, autocast regions)
        raise FxlensError(
            f"graph {k} (saved as {cap / f'graph_{k}.py'}) cannot be re-traced for reduction: "
            f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        ) from None
    return meta, values_path, cand


def base_spec(meta: dict, check: str, failed: dict | None, baseline: list[str], session: Path):
    """The reproducer's spec for a captured graph, before confirming how it fails."""
    from fxlens.minify.repro_writer import ReproSpec

    # auto with no failure seen in the script's own run: accuracy mode also catches crashes
    kind = (failed or {}).get("kind", "accuracy")
    return ReproSpec(
        backend=meta["backend"],
        check=kind if check == "auto" else check,
        config_lines=tuple(ln for ln in meta["config"] if ln not in baseline),
        env=_carried_env(),
        dynamic=bool(meta.get("dynamic")),
        autocast=meta.get("autocast") or "",
        reference=reference_backend(session / "children" / "capture", meta["backend"]),
    )


def _carried_env() -> tuple[tuple[str, str], ...]:
    from fxlens.minify.repro_writer import CARRIED_ENV

    return tuple((k, os.environ[k]) for k in CARRIED_ENV if os.environ.get(k))


def usable(sig: str | None) -> bool:
    """Whether a signature names the failure (not a broken candidate, eager's error or a lost worker)."""
    return bool(sig) and not sig.startswith(("eager:", "candidate error", "worker exited"))


def confirm(pool, cand, base, values_path: Path | None, child_sig: str | None, after: tuple[str, ...] = ()):
    """Compile the captured graph alone: the spec (inputs random or recorded, forward or also
    backward) under which it fails, its signature (the script's own preferred), whether it is
    flaky, and every signature seen. Options are tried in order, cheapest first, each a few times
    at once on the pool: a failure that does not show every time is flaky. `after`: what the
    script did with the outputs where it failed after the graph returned ("mutate": in place)."""
    from fxlens.minify.repro_writer import render

    options = [replace(base, values_path=None)]
    if values_path is not None and values_path.exists():
        options.append(replace(base, values_path=str(values_path)))
    if any(s.requires_grad for s in cand.inputs):
        options += [replace(o, backward=True) for o in options]
    if "mutate" in after:  # the caller's in-place use of the outputs, last: the rarest shape
        options += [replace(o, mutate=True) for o in options]
    reps = min(max(2, pool.size), 4)
    seen: list = []
    fallback = None
    for o in options:
        sigs = pool.evaluate([render(cand, o)] * reps)
        seen += sigs
        hits = [s for s in sigs if usable(s)]
        if not hits:
            continue
        sig = child_sig if child_sig in hits else max(set(hits), key=hits.count)
        # flaky: the same graph also passed (a run that failed differently, a timeout on a busy
        # machine say, does not make it flaky)
        found = (o, sig, None in sigs)
        if sig == child_sig or child_sig is None:
            return (*found, seen)
        fallback = fallback or found
    return (*(fallback or (None, None, False)), seen)


def _restore(value, spec):
    """A recorded value as the graph saw it (saved detached: requires_grad comes from the meta)."""
    if value is None:
        return spec.scalar
    if spec.requires_grad and (value.is_floating_point() or value.is_complex()):
        value.requires_grad_(True)
        return value if spec.leaf else value.clone()  # a non-leaf, as the graph got it
    return value


def _random_like(spec):
    """A plain tensor of an input's meta (shape, stride, dtype, device, grad), random values."""
    import torch

    t = torch.empty_strided(spec.shape, spec.stride, dtype=getattr(torch, spec.dtype), device=spec.device)
    if t.is_floating_point() or t.is_complex():
        t.normal_()
    elif t.dtype == torch.bool:
        t.random_(0, 2)
    else:
        t.random_(spec.lo, spec.hi + 1)
    t.requires_grad_(spec.requires_grad and (t.is_floating_point() or t.is_complex()))
    return t if spec.leaf or not t.requires_grad else t.clone()


def _load_values(path: Path) -> dict:
    """The recorded values, read as data (weights_only); {} when they cannot be read that way (a
    session saved by an older fxlens with a tensor subclass in it): the graph runs on random
    values then, as it does first anyway."""
    import pickle

    import torch

    try:
        return torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as e:
        print(f"fxlens minify: recorded inputs not used ({path.name}: {type(e).__name__})", flush=True)
        return {}
