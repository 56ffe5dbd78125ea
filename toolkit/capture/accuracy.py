"""The accuracy rule `fxlens minify --check accuracy` applies, for the commands that build on capture.

`accuracy_failure(ref64, eager, compiled)` says why a compiled result diverges from an fp64 eager
run more than the eager run in the original dtype does, or None. `fxlens bisect` asks it whether
minify's check will see the divergence it found (`fxlens.bisect.backend`), without importing
`fxlens.minify` (a sibling layer).

Every minify reproducer embeds this module's body (all below the `from __future__` line, which
needs only math and torch) before `fxlens.minify.candidate_check`'s part, so minify, its reproducers and
bisect apply one rule. torch is imported when the rule runs, never when this module is imported.

It also holds the rules that make a failure's message a signature (`normalise_message`): minify
compares every candidate's failure with them, and bisect whether a CompilerBisector step failed as
the script's own run did.
"""

from __future__ import annotations

import math
import re

#: torch's `same()` with an fp64 reference: the compiled result fails when its RMSE against an fp64
#: eager run exceeds ACCURACY_MULTIPLIER x the RMSE of the eager run in the original dtype, plus
#: ACCURACY_TOL / 10 x min(1, the reference's RMS) (see fxlens.minify.candidate_check for why the floor scales)
ACCURACY_MULTIPLIER = 2.0
ACCURACY_TOL = 1e-4


def flat_tensors(out) -> list:
    """The tensors of an output (a tensor, or lists, tuples and dicts of them), in order."""
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in flat_tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in flat_tensors(o)]
    return []


def _rmse(a, b) -> float:
    import torch

    return float(torch.sqrt(torch.mean((a.double() - b.double()) ** 2)))


def accuracy_failure(ref64, eager, compiled) -> str | None:
    """Why `compiled` diverges from the fp64 reference more than `eager` does, or None."""
    import torch

    ref64, eager, compiled = flat_tensors(ref64), flat_tensors(eager), flat_tensors(compiled)
    if len(compiled) != len(eager):
        return "AccuracyError: compiled returns a different number of tensors"
    for r, e, c in zip(ref64, eager, compiled):
        if tuple(c.shape) != tuple(e.shape):
            return "AccuracyError: compiled output has a different shape"
        if c.dtype != e.dtype:
            return f"AccuracyError: compiled output has dtype {c.dtype}, eager {e.dtype}"
        if not (c.is_floating_point() or c.is_complex()):
            if not torch.equal(c.cpu(), e.cpu()):
                return "AccuracyError: compiled integer output differs from eager"
            continue
        if c.numel() == 0:
            continue
        r, e, c = r.detach().cpu(), e.detach().cpu(), c.detach().cpu()
        if bool(torch.isfinite(r).all()) and not bool(torch.isfinite(c).all()):
            return "AccuracyError: compiled output has NaN/inf where the fp64 reference has none"
        finite = torch.isfinite(r) & torch.isfinite(c)
        if not bool(finite.any()):
            continue
        ref_err = _rmse(r[finite], e[finite]) if bool(torch.isfinite(e[finite]).all()) else 0.0
        res_err = _rmse(r[finite], c[finite])
        scale = float(torch.sqrt(torch.mean(r[finite].abs().double() ** 2)))  # the reference's RMS
        floor = ACCURACY_TOL / 10 * min(scale, 1.0) if scale > 0 else torch.finfo(torch.float64).tiny
        if not math.isfinite(res_err) or res_err > ACCURACY_MULTIPLIER * ref_err + floor:
            return "AccuracyError: compiled output diverges from the fp64 reference"
    return None


# (pattern, replacement): one rule a line, applied in order to the first line of a message
SIGNATURE_RULES = (
    (r"0x[0-9a-fA-F]+", "<addr>"),  # object addresses
    (r"(?:[A-Za-z]:)?(?:[\\/][\w.\-+@~]+){2,}", "<path>"),  # temp dirs, cache files, source paths
    # generated kernel names list the ops fused into them, which reduction changes
    (r"\b(?:fxk|triton_(?:poi|red|per|tem)|cpp_fused)_\w+", "<kernel>"),
    (r"\b([A-Za-z_][A-Za-z0-9_]*?)_\d+\b", r"\1"),  # fx node names: add_3 -> add
    (r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", "N"),  # ids, sizes, counts: shapes shrink during reduction
    (r"\s+", " "),  # whitespace runs
)


def normalise_message(msg):
    """The first non-empty line of an error message, normalised by SIGNATURE_RULES."""
    line = next((ln.strip() for ln in str(msg).splitlines() if ln.strip()), "")
    for pattern, repl in SIGNATURE_RULES:
        line = re.sub(pattern, repl, line)
    return line.strip()[:200]
