"""Every key of the TUI in one registry: widgets build their BINDINGS from it, `?` lists it.

A key action is (keys, action, description, scope). Scopes: "app" (anywhere in a session screen:
its actions run on tui/session_screen.py's SessionScreen, or on the App when prefixed `app.`), "tree" (the compile-id
tree), "table" (every table), "graph", "guards", "kernels", "results", "trie" (the stack trie), "code" (code panes), "diff"
(the Diff page of `fxlens tui A --diff B`), "page" (the `?` and `!` text pages).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class KeyAction:
    """One key binding: Textual key names (comma-separated), the action it runs, and what it does."""

    keys: str
    action: str
    description: str
    scope: str
    show: bool = False  # shown in the footer


# The view switch keys: "1".."9", "0", "c" and "m", in the order of VIEW_ORDER (tui/session_screen.py).
VIEW_KEYS = {
    "graph": "1",
    "guards": "2",
    "breaks": "3",
    "recompiles": "4",
    "kernels": "5",
    "results": "6",
    "metrics": "7",
    "ranks": "8",
    "artifact": "9",
    "trie": "0",
    "output": "c",
    "memory": "m",
}

_VIEW_NAMES = {
    "results": "bisect / minify / doctor results",
    "artifact": "raw artifact",
    "breaks": "graph breaks",
    "trie": "stack trie",
    "output": "inductor output code",
    "memory": "doctor's memory by cause",
}

REGISTRY: tuple[KeyAction, ...] = (
    # -- anywhere ------------------------------------------------------------------------------
    KeyAction("escape", "close_session", "back to the session this run was opened from", "app", True),
    KeyAction("question_mark", "help", "list every key", "app", True),
    KeyAction("slash", "search", "search / filter the current view", "app", True),
    KeyAction("n", "search_next", "next search match", "app"),
    KeyAction("left_square_bracket,alt+left", "back", "back in history", "app", True),
    KeyAction("right_square_bracket,alt+right", "forward", "forward in history", "app"),
    KeyAction("x", "export", "export the current view as text", "app", True),
    KeyAction("P", "perfetto", "write every rank's compile timeline as one Perfetto trace", "app"),
    KeyAction("t", "focus_tree", "focus the compile-id tree", "app"),
    KeyAction("v", "focus_view", "focus the current view", "app"),
    KeyAction("exclamation_mark", "show_skipped", "what was skipped while reading", "app"),
    KeyAction("ctrl+p", "app.command_palette", "command palette", "app"),
    KeyAction("D", "diff", "diff against the --diff session (fxlens tui A --diff B)", "app"),
    KeyAction("q", "app.quit", "quit", "app", True),
    *(
        KeyAction(key, f"view('{view}')", f"{_VIEW_NAMES.get(view, view)} view", "app", view == "graph")
        for view, key in VIEW_KEYS.items()
    ),
    # -- the compile-id tree ------------------------------------------------------------------
    KeyAction("j", "cursor_down", "down", "tree"),
    KeyAction("k", "cursor_up", "up", "tree"),
    KeyAction("l", "expand", "expand", "tree"),
    KeyAction("h", "collapse", "collapse / go to parent", "tree"),
    KeyAction("g", "first", "first", "tree"),
    KeyAction("G", "last", "last", "tree"),
    # -- tables -------------------------------------------------------------------------------
    KeyAction("j", "cursor_down", "down", "table"),
    KeyAction("k", "cursor_up", "up", "table"),
    KeyAction("h", "cursor_left", "left", "table"),
    KeyAction("l", "cursor_right", "right", "table"),
    KeyAction("g", "scroll_top", "first row", "table"),
    KeyAction("G", "scroll_bottom", "last row", "table"),
    # -- code panes ---------------------------------------------------------------------------
    KeyAction("j", "scroll_down", "scroll down", "code"),
    KeyAction("k", "scroll_up", "scroll up", "code"),
    KeyAction("g", "scroll_home", "top", "code"),
    KeyAction("G", "scroll_end", "bottom", "code"),
    # -- graph view ---------------------------------------------------------------------------
    KeyAction("o", "jump_kernel", "jump from the node to its kernel", "graph", True),
    KeyAction("s", "sort_next", "sort by the next column", "graph", True),
    KeyAction("S", "sort_reverse", "reverse the sort", "graph"),
    KeyAction("a", "next_graph", "next graph of this compile (Dynamo / ATen / fxlens)", "graph"),
    # -- guards view --------------------------------------------------------------------------
    KeyAction("d", "toggle_diff", "diff with the previous compile of the frame", "guards", True),
    KeyAction("f", "next_failed", "next failed guard", "guards"),
    # -- kernels view -------------------------------------------------------------------------
    KeyAction("o", "jump_node", "jump back to the graph node", "kernels", True),
    # -- the Diff page (read-only) -----------------------------------------------------------------
    KeyAction("escape", "close", "back to the session", "diff", True),
    KeyAction("j", "scroll_down", "scroll down", "diff"),
    KeyAction("k", "scroll_up", "scroll up", "diff"),
    KeyAction("g", "scroll_home", "top", "diff"),
    KeyAction("G", "scroll_end", "bottom", "diff"),
    KeyAction("q", "app.quit", "quit", "diff", True),
    # -- text pages (the key list, what was skipped) --------------------------------------------
    KeyAction("j,down", "scroll_page('down')", "scroll down", "page"),
    KeyAction("k,up", "scroll_page('up')", "scroll up", "page"),
    KeyAction("ctrl+d,pagedown,space", "scroll_page('page_down')", "page down", "page"),
    KeyAction("ctrl+u,pageup", "scroll_page('page_up')", "page up", "page"),
    KeyAction("g,home", "scroll_page('home')", "top", "page"),
    KeyAction("G,end", "scroll_page('end')", "bottom", "page"),
    # -- stack trie view ----------------------------------------------------------------------
    KeyAction("o", "open_compile", "open the frame's first compile in the graph view", "trie", True),
    # -- results view -------------------------------------------------------------------------
    KeyAction("o", "jump_culprit", "jump to the culprit's kernel or graph (in its run)", "results", True),
    KeyAction("r", "open_run", "open the selected run's trace (escape comes back)", "results", True),
)


def bindings(scope: str) -> list[Binding]:
    """The Textual bindings of one scope, built from REGISTRY."""
    return [Binding(k.keys, k.action, k.description, show=k.show) for k in REGISTRY if k.scope == scope]


VIEW_SCOPES = ("graph", "guards", "kernels", "results", "trie")


def view_key_bindings() -> list[Binding]:
    """App-level bindings that forward view keys (o, s, d...) to the current view.

    So `d` diffs guards even while the tree has focus; when focus is inside the view, the view's
    own binding answers first.
    """
    seen: dict[str, None] = {}
    for k in REGISTRY:
        if k.scope in VIEW_SCOPES:
            for key in k.keys.split(","):
                seen.setdefault(key, None)
    return [Binding(key, f"view_key('{key}')", "", show=False) for key in seen]


def view_action(view: str, key: str) -> str | None:
    """The action of `key` in view `view`, if it has one."""
    for k in REGISTRY:
        if k.scope == view and key in k.keys.split(","):
            return k.action
    return None


_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "exclamation_mark": "!",
}


def display(keys: str) -> str:
    """Human spelling of a comma-separated key list ("left_square_bracket,alt+left" -> "[ / alt+left")."""
    return " / ".join(_NAMES.get(k, k) for k in keys.split(","))


def help_rows() -> list[tuple[str, str, str]]:
    """(where, keys, what) for every key, for the `?` screen and docs/guides/tui.md."""
    builtin = [
        ("table", "up / down / pgup / pgdn", "move"),
        ("tree", "enter / space", "open / toggle"),
        ("app", "tab / shift+tab", "next / previous pane"),
    ]
    return [(k.scope, display(k.keys), k.description) for k in REGISTRY] + builtin
