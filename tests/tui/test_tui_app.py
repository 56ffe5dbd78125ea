"""Pilot-driven tests of the TUI: every view, navigation between them, search, export, bad logs."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette
from tui_helpers import make_app, press, wait_loaded

from fxlens.cli import main as cli_main
from fxlens.trace.graph_code import parse_graph
from fxlens.trace.session import Session
from fxlens.tui import command_for
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.screens import TextScreen
from fxlens.tui.widgets import CodeView, CompileTree, Info

pytestmark = pytest.mark.tui
SIZE = (120, 40)


def _rows(table: VimTable) -> list[list[str]]:
    return table._rows_plain()


async def _open_first_compile(pilot) -> None:
    """Tree: rank 0 is expanded; go to its first frame, expand it, open its first compile id."""
    await press(pilot, "t", "g", "j", "l", "j", "enter")
    await pilot.pause()


# -- the command ---------------------------------------------------------------------------------
def test_cli_bad_path_is_one_line_error(in_root, capsys):
    assert cli_main(["tui", str(in_root.root / "nope")]) != 0
    err = capsys.readouterr().err.strip()
    assert "nope" in err and "\n" not in err and "Traceback" not in err


def test_cli_no_session_is_one_line_error(in_root, capsys):
    assert cli_main(["tui"]) != 0  # FXLENS_SESSIONS_DIR is an empty tmp dir
    err = capsys.readouterr().err.strip()
    assert "no session" in err and "\n" not in err


def test_cli_not_a_trace(in_root, capsys, tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_text("hello\n")
    assert cli_main(["tui", str(junk)]) != 0
    assert "not a TORCH_TRACE log" in capsys.readouterr().err


def test_command_for_demo(in_root):
    cmd = command_for(in_root.session)
    assert cmd.startswith("fxlens tui ") and str(in_root.session) in cmd


# -- tree and graph --------------------------------------------------------------------------------
async def test_tree_shows_frames_compiles_and_outcomes(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        tree = app.query_one("#tree", CompileTree)
        (rank,) = tree.root.children
        frames = {n.data[1].function: n for n in rank.children}
        assert set(frames) == {"f"} or "f" in frames
        outcomes = {c.compile_id: c.outcome for n in rank.children for c in n.data[1].compiles}
        session = Session.open(in_root.session)
        breaks = {b.compile_id for b in session.graph_breaks}
        recompiled = {r.compile_id for r in session.recompiles}
        assert outcomes["0/0"] == "break" and "0/0" in breaks
        assert outcomes["1/1"] == "recompile" and "1/1" in recompiled
        await _open_first_compile(pilot)
        node = tree.cursor_node
        assert node.data[0] == "compile" and node.data[1].compile_id == "0/0"
        await press(pilot, "l")  # its artifacts
        labels = [str(c.label) for c in node.children]
        assert "Dynamo FX graph" in labels and "guards" in labels and "graph break" in labels


async def test_graph_view_node_table_sort_and_filter(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_first_compile(pilot)
        assert app.current_view == "graph"
        view = app.view()
        code = Session.open(in_root.session).artifact("0/0", "dynamo_output_graph")
        expected = [n.name for n in parse_graph(code)]
        table = app.query_one("#graph-nodes", VimTable)
        assert [r[0] for r in _rows(table)] == expected
        relu = next(r for r in _rows(table) if "relu" in r[2])
        assert relu[1] == "call_function" and relu[3] == "[4, 8]" and relu[4] == "f32" and relu[5] == "[8, 1]"
        assert "model.py:56" in relu[7]
        await press(pilot, "v", "s", "s")  # sort by op
        ops = [r[1] for r in _rows(table)]
        assert ops == sorted(ops) and view.params["sort"] == "op"
        await press(pilot, "S")
        assert [r[1] for r in _rows(table)] == sorted(ops, reverse=True)
        await press(pilot, "slash", *"relu", "enter")
        assert [r[0] for r in _rows(table)] and all("relu" in " ".join(r).lower() for r in _rows(table))
        # the code pane marks the selected node's line
        code_view = app.query_one("#graph-code", CodeView)
        (marked,) = [i for i, m in code_view.marks.items() if m == "cursor"]
        assert "relu" in code_view.lines[marked]


async def test_node_to_kernel_and_back(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_first_compile(pilot)
        while app.view().params.get("kind") != "artifact:fxlens_aten_forward_graph":
            await press(pilot, "a")
        await press(pilot, "v", "slash", *"mul", "enter")
        assert app.view().selected().name == "mul"
        await press(pilot, "o")
        assert app.current_view == "kernels"
        k = app.view().params
        assert k["kernel"] == "fxlens_k0_relu_mul" and k["compile_id"] == "0/0"
        detail = app.query_one("#kernel-detail", Info).plain
        assert "aten.relu.default" in detail and "aten.mul.Tensor" in detail and "read" in detail
        assert "fxlens_k0_relu_mul" in app.query_one("#kernel-source", CodeView).text()
        await press(pilot, "o")  # back to the node the kernel computes
        assert app.current_view == "graph" and app.view().selected().name == "mul"
        assert app.view().params["kind"] == "artifact:fxlens_aten_forward_graph"
        await press(pilot, "left_square_bracket")
        assert app.current_view == "kernels"
        await press(pilot, "left_square_bracket")
        assert app.current_view == "graph"
        await press(pilot, "right_square_bracket")
        assert app.current_view == "kernels"
        # from the Dynamo graph, whose node names the kernels do not use: through the user line
        await press(pilot, "t", "enter")
        assert app.view().params["kind"] == "dynamo_output_graph"
        await press(pilot, "v", "slash", *"relu", "enter", "o")
        assert app.current_view == "kernels" and app.view().params["kernel"] == "fxlens_k0_relu_mul"


# -- guards, breaks, recompiles ---------------------------------------------------------------------
async def test_guards_failed_guard_and_diff(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await _open_first_compile(pilot)
        await press(pilot, "2")
        assert app.current_view == "guards"
        code = app.query_one("#guards-code", CodeView)
        failed = [i for i, m in code.marks.items() if m == "failed"]
        assert len(failed) == 1
        assert "TENSOR_MATCH" in code.lines[failed[0]] and "L['x']" in code.lines[failed[0]]
        assert "recompile 0/1" in app.query_one("#guards-title", Info).plain
        await press(pilot, "d")
        title = app.query_one("#guards-title", Info).plain
        assert "guard diff 0/0 → 0/1" in title
        removed = [code.lines[i] for i, m in code.marks.items() if m == "removed"]
        added = [code.lines[i] for i, m in code.marks.items() if m == "added"]
        assert any("size=[4, 8]" in x for x in removed) and any("size=[2, 8]" in x for x in added)


async def test_breaks_view_hints_and_source(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "3")
        rows = _rows(app.query_one("#breaks-table", VimTable))
        assert rows == [["2", "model.py:57", "f", "Failed to trace builtin operator"]]
        detail = app.query_one("#breaks-detail", Info).plain
        assert "print" in detail and "hint" in detail
        assert '▶  57     print("between graphs")' in detail  # the user's line, highlighted


async def test_recompiles_view_cause_and_fix(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "4")
        rows = _rows(app.query_one("#recompiles-table", VimTable))
        assert rows and all(r[1] == "f" for r in rows)
        assert any("dim 0" in r[3] for r in rows)
        detail = app.query_one("#recompiles-detail", Info).plain
        assert "fix" in detail and "mark_dynamic" in detail


# -- results, metrics, ranks -----------------------------------------------------------------------
async def test_results_view_bisect_and_minify(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "6")
        assert [r[1] for r in _rows(app.query_one("#results-table", VimTable))] == ["bisect", "minify"]
        detail = app.query_one("#results-detail", Info).plain
        assert "✓ pass  fxlens_aot_eager" in detail and "✗ FAIL  fxlens" in detail
        assert "fxlens_k0_relu_mul" in detail
        await press(pilot, "o")  # the culprit kernel
        assert app.current_view == "kernels" and app.view().params["kernel"] == "fxlens_k0_relu_mul"
        await press(pilot, "left_square_bracket", "v", "j")
        detail = app.query_one("#results-detail", Info).plain
        assert "6 → 2" in detail
        assert app.query_one("#results-code", CodeView).text() == in_root.repro.read_text()


async def test_metrics_view(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        all_rows = _rows(app.query_one("#metrics-table", VimTable))
        session = Session.open(in_root.session)
        # one row per compile, then the report's compile-time headlines (cold start, ...)
        rows = all_rows[: len(session.metrics)]
        assert [r[1] for r in rows] == [m.compile_id for m in session.metrics]
        assert all_rows[len(rows)][1] == "cold start"
        for r, m in zip(rows, session.metrics, strict=True):
            assert float(r[5]) == pytest.approx(m.total_s, abs=1e-3)
        detail = app.query_one("#metrics-detail", Info).plain
        assert "time by stage" in detail and "Dynamo (trace, guards)" in detail
        assert "remote_cache" not in detail and "entire_frame_compile_time" not in detail  # not stages
        # a click on the "total s" header sorts by it, numerically; a second click reverses
        table = app.query_one("#metrics-table", VimTable)
        x = 1 + sum(w + 2 for w in table._column_widths()[:5]) + 1
        ids = {m.compile_id for m in session.metrics}
        await pilot.click("#metrics-table", offset=(x, 0))
        totals = [float(r[5]) for r in _rows(table) if r[1] in ids]
        assert totals == sorted(totals)
        await pilot.click("#metrics-table", offset=(x, 0))
        assert [float(r[5]) for r in _rows(table) if r[1] in ids] == sorted(totals, reverse=True)


async def test_ranks_view_shows_divergence(in_root, tmp_path):
    app = make_app(in_root.multi, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        tree = app.query_one("#tree", CompileTree)
        assert [str(n.label).split()[:2] for n in tree.root.children] == [["rank", "0"], ["rank", "1"]]
        await press(pilot, "8")
        # one row per group of ranks that compiled alike: here each rank is its own group
        rows = _rows(app.query_one("#ranks-table", VimTable))
        assert [r[0] for r in rows] == ["0", "1"]
        assert rows[0][3] == "the reference" and rows[1][3].startswith("recompile of f")
        await press(pilot, "v", "j")
        detail = app.query_one("#ranks-detail", Info).plain
        assert "diverges" in detail and "1 rank(s): 1" in detail
        row = next(ln.split() for ln in detail.splitlines() if ln.strip().startswith("f "))
        assert row[0] == "f" and int(row[2]) > int(row[1])  # rank 1 compiled f more often


# -- keys: search, help, palette, export, history ------------------------------------------------
async def test_tree_search_and_next(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "t", "slash", *"1/1", "enter")
        await pilot.pause()
        tree = app.query_one("#tree", CompileTree)
        assert tree.has_focus and tree.cursor_node.data[1].compile_id == "1/1"
        await press(pilot, "slash", *"recompile", "enter")
        await pilot.pause()
        first = tree.cursor_node.data[1].compile_id
        await press(pilot, "n")
        await pilot.pause()
        second = tree.cursor_node.data[1].compile_id
        assert {first, second} == {"0/1", "1/1"}


async def test_help_palette_and_export(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, TextScreen)
        text = app.screen.plain
        assert "jump from the node to its kernel" in text and "export the current view" in text
        await press(pilot, "escape")
        await press(pilot, "ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await press(pilot, "escape")
        await _open_first_compile(pilot)
        await press(pilot, "x")
        path = app.last_export
        assert path is not None and path.parent == tmp_path / "exports"
        text = path.read_text()
        assert "compile 0/0" in text and "Nodes:" in text and "torch.relu" in text


async def test_corrupt_log_shows_notice_and_still_works(in_root, tmp_path):
    app = make_app(in_root.corrupt, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        notice = app.query_one("#notice", Info)
        # the fixture's log was cut at 70% of its bytes, mid-record: that comes first
        assert notice.has_class("shown") and "truncated trace: dedicated_log_torch_trace_cut.log" in notice.plain
        assert "ends mid-record" in notice.plain
        await press(pilot, "exclamation_mark")
        assert "unreadable" in app.screen.plain and "is truncated: it ends mid-record" in app.screen.plain
        await press(pilot, "escape")
        for key in "123456789":
            await press(pilot, key)  # every view draws what is readable
        assert app.is_running and app.query_one("#tree", CompileTree).root.children
