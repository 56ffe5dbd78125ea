"""The culprit graph as a bisect run's trace names it: compile id, the user's function, file, line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fxlens.errors import FxlensError

if TYPE_CHECKING:
    from fxlens.bisect.runs import Outcome


def culprit_of(out: Outcome, ordinal: int, fallback=()) -> dict:
    """{compile_id, function, file, line, kernel, ops} of graph `ordinal` as a run's trace names it."""
    cid = out.graphs.get(ordinal) or next((o.graphs[ordinal] for o in fallback if ordinal in o.graphs), "?")
    culprit = {"compile_id": cid, "function": None, "file": None, "line": None, "kernel": None, "ops": None}
    found = []
    for o in (out, *fallback):
        try:
            graphs = o.session().graphs
        except FxlensError:
            continue
        g = next((g for g in graphs if g.compile_id == cid), None)
        if g is not None:
            found.append(g)
    # a graph whose compile failed may be named after torch's own frame (`inner` of
    # torch/_dynamo/external_utils.py, for a compiled nn.Module) where the runs that compiled it
    # name the user's (`Sequential.forward`): the user's name, from whichever run has it
    g = next((g for g in found if not torch_frame_name(g)), found[0] if found else None)
    if g is not None:
        culprit.update(function=g.function, file=g.file, line=g.line)
    return culprit


def torch_frame_name(g) -> bool:
    """Whether a graph is named after a frame of torch's own code, not the user's."""
    library = getattr(g, "library", None) or ""
    return (
        bool(library) and g.function == getattr(g, "co_name", None) and library.endswith(f" in {g.function}")
    )
