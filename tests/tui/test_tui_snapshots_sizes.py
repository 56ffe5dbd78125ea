"""Snapshots at the classic 80x24 terminal and at 200x50 (pytest-textual-snapshot, cursor blink off).

At 80x24 the views keep the column that tells rows apart (a break's reason, a recompile's cause, a
group's ranks and cause), the cut cells of the cursor row are shown whole under the table, and the
key list scrolls with j/k. The Ranks view runs on 16 ranks grown from the committed gloo trace
(tests/data/ranks), whose text and numbers are fixed, so its snapshot is deterministic; so do the
stack trie; the output-code and metrics views run on 16 ranks of the committed inductor trace
(tests/data/inductor).
"""

from __future__ import annotations

import pytest
from tui_helpers import make_app, press, settle, wait_loaded

pytestmark = pytest.mark.tui
SMALL, LARGE = (80, 24), (200, 50)


def _run(*keys: str):
    async def run_before(pilot) -> None:
        await wait_loaded(pilot.app, pilot)
        await press(pilot, *keys)
        await settle(pilot.app, pilot)

    return run_before


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_snapshot_ranks_view(job_16, tmp_path, snap_compare, size):
    # the outlier group selected: its cause, where it diverges, its ranks
    app = make_app(job_16, tmp_path)
    assert snap_compare(app, terminal_size=size, run_before=_run("8", "v", "j"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_snapshot_breaks_view_sizes(in_root, tmp_path, snap_compare, size):
    assert snap_compare(make_app(in_root.session, tmp_path), terminal_size=size, run_before=_run("3"))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x50"])
def test_snapshot_recompiles_view_sizes(in_root, tmp_path, snap_compare, size):
    assert snap_compare(make_app(in_root.multi, tmp_path), terminal_size=size, run_before=_run("4"))


def test_snapshot_kernels_view_80x24(in_root, tmp_path, snap_compare):
    # kernels of different compiles differ in compile id and kernel name: both stay on screen
    assert snap_compare(make_app(in_root.session, tmp_path), terminal_size=SMALL, run_before=_run("5"))


def test_snapshot_key_help_scrolled_80x24(in_root, tmp_path, snap_compare):
    # the key list is longer than 24 lines: j scrolls it (G would jump to its end)
    keys = ("question_mark", "j", "j", "j", "j", "j")
    assert snap_compare(make_app(in_root.session, tmp_path), terminal_size=SMALL, run_before=_run(*keys))


def test_snapshot_stack_trie_view_80x24(job_16, tmp_path, snap_compare):
    # the leaf frame selected: its compiles (0/0 on every rank, 0/1 a recompile on rank 9)
    app = make_app(job_16, tmp_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=_run("0", "v", "G"))


def test_snapshot_output_code_view_80x24(inductor_16, tmp_path, snap_compare):
    # the same kernel on two rows, told apart by their ranks (rank 9's inductor wrote other code)
    app = make_app(inductor_16, tmp_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=_run("c"))


def test_snapshot_metrics_view_80x24(inductor_16, tmp_path, snap_compare):
    # compile id, outcome, total and cache outcome stay on screen
    app = make_app(inductor_16, tmp_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=_run("7"))


def test_fit_widths_gives_way_least_important_first():
    from fxlens.tui.lazy_table import fit_widths

    keys = ["count", "where", "function", "reason"]
    natural = [5, 30, 12, 60]
    priority = ("reason", "where", "function", "count")
    assert fit_widths(natural, keys, priority, 200) == natural  # room for all: untouched
    w = fit_widths(natural, keys, priority, 60)
    assert sum(x + 2 for x in w if x) <= 60
    assert w[3] >= 24 and w[1] >= 16  # the reason keeps the most, then where
    assert w[0] in (0, 5) and w[2] <= 6  # count and function gave way first
    # nothing fits even at the floors: the least important columns are hidden, never the top two
    w = fit_widths(natural, keys, priority, 44)
    assert w[0] == 0 and w[3] >= 24 and w[1] >= 16
