"""What a script did with a compiled graph's outputs when it failed after the graph returned.

A failure can happen outside every compiled graph and still be caused by one: the caller mutates
a returned output that the compiled code made a view (`y = f(x); y.mul_(2)`: "Output 0 of
CompiledFunction is a view and is being modified inplace"), or the backward finds a tensor the
compiled forward saved modified in place (a version-counter error). The script's own traceback
says which: its innermost frame in the user's code is the line that raised. minify then confirms
the graphs with that use replayed (`fxlens.minify.confirm.confirm`, `after`), and the reproducer
runs it after the compiled call (`MUTATE`, `BACKWARD`).
"""

from __future__ import annotations

import re

from fxlens.trace.userframes import innermost_user_frame, parse_traceback

# an in-place method call (`y.mul_(2)`, not `requires_grad_()`), an augmented or item assignment
_IN_PLACE = re.compile(r"\.(?!requires_grad_|retain_grad|zero_grad)\w+_\(|[-+*/%&|^@]=(?!=)|\]\s*=(?!=)")


def after_return(stderr: str) -> tuple[str, ...]:
    """("mutate",) when the script's last traceback ends in user code that mutates in place, else ()."""
    start = stderr.rfind("Traceback (most recent call last):")
    if start < 0:
        return ()
    frame = innermost_user_frame(parse_traceback(stderr[start:]))
    if frame is None or not frame.code:
        return ()
    return ("mutate",) if _IN_PLACE.search(frame.code) else ()
