"""A grad-mode recompile in a library's own code: the library calls the function with and without
gradients itself (DETR's loss calls `generalized_box_iou` inside its Hungarian matcher, which runs
under `torch.no_grad()`, and again in the loss), not the script's training and validation loops."""

from __future__ import annotations

from dataclasses import replace

from fxlens.trace.records import RecompileCause
from fxlens.trace.userfiles import is_library_code
from fxlens.trace.userframes import short_path


def grad_mode_in_library(cause: RecompileCause, code_file, entered: set | None) -> RecompileCause:
    """CAUSE with its fix in the library's terms when it is a grad-mode change, every compile of it
    is a library's code (CODE_FILE(compile_id): the compiled frame's own file, from torch's
    compilation metrics), and none is a frame the script's compiled call entered (ENTERED: those
    compile ids; None when the trace does not say). A library module the script calls under its
    own `torch.no_grad()` (torchvision's ResNet, torch's `inner` wrapper of a module) is entered
    by that call and keeps the training-vs-validation text."""
    if cause.kind != "grad_mode" or entered is None or entered & set(cause.compile_ids):
        return cause
    files = {code_file(cid) for cid in cause.compile_ids}
    if not files or not all(f and is_library_code(f) for f in files):
        return cause
    # named from its package, as torch's guard comments name library files
    where = ", ".join(sorted(short_path(f).replace("\\", "/").rsplit("-packages/", 1)[-1] for f in files))
    fix = (
        f"`{cause.function}` is a library's code ({where}) that the library itself calls both with and "
        "without gradients (a step of it under `torch.no_grad()`, such as a detection loss's matcher): "
        "one compile per grad mode is expected, and nothing in your script changes it"
    )
    return replace(cause, fix=fix)
