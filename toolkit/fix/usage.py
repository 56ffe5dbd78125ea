"""What only a run of the script can tell `fxlens fix`, watched inside the user's process.

DataLoaders: which loader of the script has a short last batch (its dataset's length is not a
multiple of its batch size), and where the script made it; `drop_last=True` is a fix for that
loader, not for the first loader in the file (a training loader whose batches all match).
"""

from __future__ import annotations

import functools
import sys

from fxlens.trace.userframes import live_user_frame


class Usage:
    """The record of one run: `{"loaders": [{file, line, batch_size, length, drop_last}]}`."""

    def __init__(self):
        self.loaders: list[dict] = []

    def watch_loaders(self) -> None:
        """Note every DataLoader the script makes (the user's line that made it)."""
        try:
            from torch.utils.data import DataLoader
        except ImportError:
            return
        init = DataLoader.__init__
        if getattr(init, "_fxlens_usage", False):
            return
        loaders = self.loaders

        @functools.wraps(init)
        def watched(loader, *args, **kwargs):
            init(loader, *args, **kwargs)
            try:
                loaders.append(_loader_record(loader))
            except Exception:  # noqa: BLE001 - a record must never break the script
                pass

        watched._fxlens_usage = True
        DataLoader.__init__ = watched

    def record(self) -> dict:
        return {"loaders": self.loaders}


def _loader_record(loader) -> dict:
    frame = live_user_frame(sys._getframe(2))
    try:
        length = len(loader.dataset)
    except TypeError:  # an iterable dataset has no length
        length = None
    return {
        "file": frame.f_code.co_filename if frame else "",
        "line": frame.f_lineno if frame else 0,
        "batch_size": loader.batch_size,
        "length": length,
        "drop_last": bool(loader.drop_last),
    }


def short_batch(loader: dict) -> bool:
    """Whether the loader ends with a short batch (the one that recompiles)."""
    b, n = loader.get("batch_size"), loader.get("length")
    return bool(b) and n is not None and not loader.get("drop_last") and n % b != 0
