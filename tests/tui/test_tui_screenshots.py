"""SVG screenshots of the main views (Textual's save_screenshot), as docs/guides/tui.md shows them.

Slow and opt-in for the README: `FXLENS_SCREENSHOTS_DIR=docs/guides/screenshots python -m pytest -m slow
tests/tui/test_tui_screenshots.py` rewrites the committed SVGs; otherwise they go to tmp_path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tui_helpers import make_app, press, settle, wait_loaded

pytestmark = [pytest.mark.tui, pytest.mark.slow]

# (file name, trace fixture attribute, keys pressed after loading)
SHOTS = [
    ("tree-graph.svg", "session", ("t", "g", "j", "l", "j", "enter", "l", "a", "a", "v", "j")),
    ("guards.svg", "session", ("t", "g", "j", "l", "j", "enter", "2")),
    ("guards-diff.svg", "session", ("t", "g", "j", "l", "j", "enter", "2", "d")),
    ("breaks.svg", "session", ("3",)),
    ("recompiles.svg", "session", ("4",)),
    ("kernels.svg", "session", ("5",)),
    ("bisect.svg", "session", ("6",)),
    ("bisect-runs.svg", "bisect", ("v", "tab", "tab")),
    ("bisect-run-open.svg", "bisect", ("v", "tab", "tab", "k", "r", "3")),
    ("metrics.svg", "session", ("7",)),
    ("ranks.svg", "multi", ("8",)),
    ("stack-trie.svg", "session", ("0", "v", "G")),
    ("output-code.svg", "inductor", ("c",)),
    ("corrupt.svg", "corrupt", ()),
]


# resolved now: the in_root fixture changes the working directory before the test runs
SHOTS_DIR = (
    Path(os.environ["FXLENS_SCREENSHOTS_DIR"]).resolve() if os.environ.get("FXLENS_SCREENSHOTS_DIR") else None
)


async def test_screenshots(in_root, inductor_16, tmp_path):
    out = SHOTS_DIR or tmp_path / "shots"
    out.mkdir(parents=True, exist_ok=True)
    for name, which, keys in SHOTS:
        # "inductor": 16 ranks of the committed inductor trace (tests/data/inductor), rank 9 differs
        app = make_app(inductor_16 if which == "inductor" else getattr(in_root, which), tmp_path)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_loaded(app, pilot)
            await press(pilot, *keys)
            await settle(app, pilot)
            app.save_screenshot(name, path=str(out))
        svg = (out / name).read_text()
        assert svg.startswith("<svg") and "fxlens" in svg
