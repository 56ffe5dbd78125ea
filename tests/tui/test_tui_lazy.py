"""The TUI stays responsive: graphs parse in a worker behind a placeholder, views keep their state
across switches (mounted once, nothing re-read or re-highlighted), the key bar follows focus."""

from __future__ import annotations

import threading

import pytest
from tui_helpers import make_app, press, settled, wait_loaded

import fxlens.tui.view_graph as view_graph
from fxlens.trace.graph_code import parse_graph
from fxlens.trace.session import Session
from fxlens.tui.lazy_table import VimTable
from fxlens.tui.screens import TextScreen
from fxlens.tui.widgets import CodeView, KeyBar

pytestmark = pytest.mark.tui
SIZE = (120, 40)
OPEN_FIRST_COMPILE = ("t", "g", "j", "l", "j", "enter")


def _names(table: VimTable) -> list[str]:
    return [r[0] for r in table._rows_plain()]


async def test_graph_shows_a_placeholder_then_its_content(in_root, tmp_path, monkeypatch):
    gate = threading.Event()
    threads: list[threading.Thread] = []
    real = view_graph.read_graph

    def gated(rec):
        threads.append(threading.current_thread())
        assert gate.wait(20), "the test never opened the gate"
        return real(rec)

    monkeypatch.setattr(view_graph, "read_graph", gated)
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await pilot.press(*OPEN_FIRST_COMPILE)  # not press(): the parse is held on purpose
        for _ in range(100):
            if threads:
                break
            await pilot.pause(0.02)
        view = app.view()
        assert app.current_view == "graph" and view.loading
        assert "reading…" in app.query_one("#graph-title").plain
        assert _names(app.query_one("#graph-nodes", VimTable)) == []
        assert threads[0] is not threading.main_thread()  # parsed off the event loop
        await pilot.press("3")  # the app answers keys while the graph is parsed
        assert app.current_view == "breaks"
        await pilot.press("1")
        gate.set()
        await settled(app, pilot)
        code = Session.open(in_root.session).artifact("0/0", "dynamo_output_graph")
        assert not view.loading
        assert _names(app.query_one("#graph-nodes", VimTable)) == [n.name for n in parse_graph(code)]
        assert "nodes" in app.query_one("#graph-title").plain
        assert "torch.relu" in app.query_one("#graph-code", CodeView).text()


async def test_view_switches_keep_state_without_rereading(in_root, tmp_path, monkeypatch):
    reads: list[str] = []
    real = view_graph.read_graph

    def counted(rec):
        reads.append(rec.kind)
        return real(rec)

    monkeypatch.setattr(view_graph, "read_graph", counted)
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, *OPEN_FIRST_COMPILE, "v", "s", "s", "slash", *"re", "enter", "j")
        graph = app.view()
        table = app.query_one("#graph-nodes", VimTable)
        code = app.query_one("#graph-code", CodeView)
        before = (dict(graph.params), _names(table), table.cursor_row, graph.selected().name)
        lines = code._lines
        assert lines is not None and before[0]["sort"] == "op" and before[0]["filter"] == "re"
        views = {v.view_id: v for v in app.main.query("View")}
        for key in ("2", "3", "5", "7", "1"):
            await press(pilot, key)
        assert app.current_view == "graph" and app.view() is graph
        # the same widgets, still mounted; only which one is displayed changed
        assert {v.view_id: v for v in app.main.query("View")} == views
        assert (dict(graph.params), _names(table), table.cursor_row, graph.selected().name) == before
        assert code._lines is lines  # nothing re-highlighted
        assert reads == ["dynamo_output_graph"]  # nor re-read
        # another graph and back: the first comes from the cache, its colours too
        await press(pilot, "a")
        await press(pilot, "left_square_bracket")
        assert graph.params["kind"] == "dynamo_output_graph" and len(reads) == 2
        assert code._lines is lines


async def test_a_scrolled_pane_stays_scrolled_across_view_switches(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=(100, 16)) as pilot:  # small: the guard list scrolls
        await wait_loaded(app, pilot)
        await press(pilot, *OPEN_FIRST_COMPILE, "2", "v", "g", "j", "j", "j")
        guards = app.query_one("#guards-code", CodeView)
        assert guards.has_focus and guards.scroll_offset.y == 3
        await press(pilot, "3", "1", "2")
        assert app.current_view == "guards" and guards.scroll_offset.y == 3


async def test_key_bar_follows_focus_and_clicks(in_root, tmp_path):
    app = make_app(in_root.session, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        bar = app.query_one("#keys", KeyBar)
        await press(pilot, *OPEN_FIRST_COMPILE, "t")
        assert "list every key" in bar.plain and "jump from the node" not in bar.plain
        await press(pilot, "v")  # the node table: its own keys join
        assert "jump from the node to its kernel" in bar.plain and "sort by the next column" in bar.plain
        assert "back to the session" not in bar.plain  # escape means nothing in the opened session
        x = bar.plain.index("list every key") - 2
        await pilot.click("#keys", offset=(x, 0))
        await settled(app, pilot)
        assert isinstance(app.screen, TextScreen)


async def test_full_garbage_collections_wait_for_idle_time(in_root, tmp_path):
    import gc

    full: list[int] = []

    def count_full(phase, info):
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    before = gc.get_threshold()
    app = make_app(in_root.session, tmp_path)
    app.IDLE_GC_S = 0.2
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        assert gc.get_threshold()[2] > 10**6  # no automatic full collection while the app runs
        gc.callbacks.append(count_full)
        try:
            app.idle_gc_ms.clear()
            gc.collect(1)  # something for the old generation, as keys leave behind
            await press(pilot, *OPEN_FIRST_COMPILE, "2", "3", "1")
            for _ in range(100):
                if app.idle_gc_ms:
                    break
                await pilot.pause(0.05)
        finally:
            gc.callbacks.remove(count_full)
        assert app.idle_gc_ms, "no collection ran once the keys stopped"
        assert len(full) == len(app.idle_gc_ms)  # every full collection was an idle one
    assert gc.get_threshold() == before  # restored when the app ends
