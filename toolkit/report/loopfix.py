"""The fix of a Python loop Dynamo unrolled over modules of one class: compile the class once.

`for layer in self.layers: x = layer(x)` traced by Dynamo is the body traced once per iteration.
When the loop holds most of Dynamo's seconds and its body calls the loop variable, the class of
what it calls is read from what Dynamo traced (the `forward` it inlined exactly once per iteration,
the outermost such one) and named from that code's own source (the class whose `forward` starts at
the code's first line); it is never guessed from names. The finding carries the fixes `fxlens fix`
can try: that class marked `torch.compiler.nested_compile_region` (the model stays compiled whole)
and, when the loop is a module's `forward`, regional compilation of the class.

Pure Python (ast): read by the report, no torch import.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

from fxlens.trace.userframes import shown_path


def loop_finding(section: dict, dominant: float) -> dict | None:
    """The dominant loop (share >= `dominant`) as a finding with its block class and actions, or
    None when no loop dominates or its body's class cannot be read."""
    loops = section.get("loops") or []
    if not loops or loops[0]["share"] < dominant:
        return None
    lp = loops[0]
    var = _loop_variable_called(lp["file"], lp["line"])
    if var is None:
        return None
    block = _block_code(section.get("functions") or [], lp["iterations"])
    if block is None:
        return None
    cls = class_of(block["file"], block["first_line"])
    if cls is None:
        return None

    from fxlens.report.fixes import action  # the fix table: only once a loop dominates

    site = f"`{lp['function']}`"
    acts = [action("nested_region", block=cls, site=site)]
    if lp["function"] == "forward":  # the loop runs inside a module: its blocks can compile alone
        acts.append(action("regional", block=cls, site=site))
    return {
        "kind": "unrolled_loop",
        "file": lp["file"],
        "line": lp["line"],
        "function": lp["function"],
        "block_class": cls,
        "block_file": block["file"],
        "block_line": block["first_line"],
        # Dynamo's seconds tracing one call of the block (inclusive of what it inlined)
        "block_s": round(block["incl_s"] / lp["iterations"], 6),
        "iterations": lp["iterations"],
        "incl_s": lp["incl_s"],
        "share": lp["share"],
        "message": (
            f"the loop at {shown_path(lp['file'])}:{lp['line']} calls `{var}` ({cls}) {lp['iterations']} times and "
            f"Dynamo traces each call: {lp['incl_s']:.2f} s ({lp['share']:.0%}) of its seconds"
        ),
        "actions": acts,
    }


def activations(fn: dict) -> int:
    """How many times Dynamo entered the function: the hits of its first line (`def`, where the
    code's first instruction sits), else of its first line entered."""
    lines = [ln for ln in fn.get("lines") or [] if ln.get("hits")]
    first = next((ln for ln in lines if ln["line"] == fn["first_line"]), None)
    first = first or min(lines, key=lambda ln: ln["line"], default=None)
    return first["hits"] if first else 0


def _block_code(functions: list[dict], iterations: int) -> dict | None:
    """The `forward` Dynamo inlined once per iteration; of several (a block and its own
    submodules, each called once), the outermost: the most inclusive seconds."""
    once = [
        f
        for f in functions
        if f.get("code_name", f["function"]) == "forward" and activations(f) == iterations
    ]
    return max(once, key=lambda f: f["incl_s"], default=None)


def _loop_variable_called(file: str, line: int) -> str | None:
    """The loop variable of the `for` at FILE:LINE when the loop's body calls it (`layer(x)`)."""
    tree = _parse(file)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and node.lineno == line and isinstance(node.target, ast.Name):
            var = node.target.id
            calls = (
                n
                for stmt in node.body
                for n in ast.walk(stmt)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == var
            )
            return var if next(calls, None) is not None else None
    return None


def class_of(file: str, first_line: int) -> str | None:
    """The class whose method starts at FILE:FIRST_LINE (a decorated method starts at its first
    decorator, as the code object's first line does)."""
    tree = _parse(file)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for fn in node.body:
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
                if start == first_line:
                    return node.name
    return None


def _parse(file: str) -> ast.Module | None:
    """FILE's syntax tree, cached per version of the file: one edited during a long TUI session
    (a new mtime or size) is parsed anew."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return None
    return _parse_version(file, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _parse_version(file: str, mtime_ns: int, size: int) -> ast.Module | None:
    try:
        with open(file, encoding="utf-8") as f:
            return ast.parse(f.read(), filename=file)
    except (OSError, SyntaxError, ValueError):
        return None
