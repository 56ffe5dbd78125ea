"""The fix of an unrolled loop: the block class is read from the code Dynamo inlined and its source.

Fast: sections shaped as `compile_lines` builds them, over real source files written here; the
class of a code is checked against Python's own (inspect) on the classes those files define.
"""

from __future__ import annotations

import importlib.util
import inspect
import os

import pytest

from fxlens.fix.findings import gather
from fxlens.report.document import text_lines
from fxlens.report.linetimes import DOMINANT, line_time_section
from fxlens.report.loopfix import loop_finding

MODEL = '''
import functools


def deco(f):
    @functools.wraps(f)
    def inner(*a):
        return f(*a)
    return inner


class Inner:
    def forward(self, x):
        return x + 1


class Block:
    @deco
    def forward(self, x):
        return self.inner(x)


class Stack:
    def forward(self, x):
        for layer in self.layers:
            x = layer(x) * 2
        return x

    def unused(self, x):
        for layer in self.layers:
            x = x + layer.bias
        return x
'''


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    spec = importlib.util.spec_from_file_location("loopfix_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


def _fn(code, name, incl_s, hits, file):
    """One `functions` row for a code object, entered `hits` times."""
    return {
        "file": str(file),
        "function": name,
        "code_name": name,
        "first_line": code.co_firstlineno,
        "incl_s": incl_s,
        "lines": [{"line": code.co_firstlineno, "hits": hits}],
    }


def _section(path, mod, loop_line, iterations=300, share=0.8, block_hits=300, inner_hits=300):
    stack = mod.Stack.forward.__code__
    return {
        "dynamo_s": 10.0,
        "loops": [
            {"file": str(path), "function": "forward", "line": loop_line, "last_line": loop_line + 1,
             "iterations": iterations, "incl_s": 8.0, "share": share}
        ],
        "functions": [
            _fn(stack, "forward", 9.0, 1, path),
            _fn(inspect.unwrap(mod.Block.forward).__code__, "forward", 7.0, block_hits, path),
            _fn(mod.Inner.forward.__code__, "forward", 3.0, inner_hits, path),
        ],
    }  # fmt: skip


def _loop_line(path, after: str) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if after in t)
    return next(i for i, t in enumerate(lines[start:], start + 1) if t.strip().startswith("for "))


def test_block_class_and_actions(model):
    path, mod = model
    line = _loop_line(path, "class Stack")
    found = loop_finding(_section(path, mod, line), DOMINANT)
    # the decorated Block.forward starts at its decorator, as its code object does
    assert found["block_class"] == "Block" and found["block_line"] == inspect.unwrap(mod.Block.forward).__code__.co_firstlineno
    assert [a["kind"] for a in found["actions"]] == ["nested_region", "regional"]
    assert all(a["params"]["block"] == "Block" for a in found["actions"])
    assert found["iterations"] == 300 and f"model.py:{line}" in found["message"]
    assert found["block_s"] == pytest.approx(7.0 / 300, abs=1e-6)  # Block's inclusive seconds per call


def test_no_finding_when_the_loop_does_not_call_its_variable(model):
    path, mod = model
    assert loop_finding(_section(path, mod, _loop_line(path, "def unused")), DOMINANT) is None


def test_no_finding_below_the_dominant_share_or_without_a_once_per_iteration_forward(model):
    path, mod = model
    line = _loop_line(path, "class Stack")
    assert loop_finding(_section(path, mod, line, share=DOMINANT - 0.01), DOMINANT) is None
    assert loop_finding(_section(path, mod, line, block_hits=600, inner_hits=600), DOMINANT) is None
    # Block entered twice per iteration: Inner (once per iteration) is then the block
    assert loop_finding(_section(path, mod, line, block_hits=600), DOMINANT)["block_class"] == "Inner"


def test_fix_gathers_the_loops_actions_and_the_text_shows_them(model):
    path, mod = model
    sec = _section(path, mod, _loop_line(path, "class Stack"))
    sec["unrolled_loop"] = loop_finding(sec, DOMINANT)
    got = gather({"compile_lines": sec}, str(path))
    assert {(e["action"]["kind"], e["action"]["params"]["block"]) for e in got} == {
        ("nested_region", "Block"),
        ("regional", "Block"),
    }
    assert all(e["finding"] == sec["unrolled_loop"]["message"] for e in got)
    text = "\n".join(
        text_lines(
            line_time_section(
                {"compile_lines": {**sec, "available": True, "parts_s": {"traced": 8.0}, "top_lines": [], "functions": []}}
            )
        )
    )
    assert "the loop's body calls Block" in text and "nested_compile_region" in text


def test_a_file_edited_between_reads_is_read_anew(model):
    # a long TUI session reads the finding again after the class was renamed: the name in the file
    # now, not the one parsed from its first version
    path, mod = model
    sec = _section(path, mod, _loop_line(path, "class Stack"))
    assert loop_finding(sec, DOMINANT)["block_class"] == "Block"
    path.write_text(MODEL.replace("class Block:", "class TransformerBlock:"))  # a new size
    assert loop_finding(sec, DOMINANT)["block_class"] == "TransformerBlock"
    before = os.stat(path)
    path.write_text(MODEL.replace("class Block:", "class Layer:"))  # the old size: mtime tells
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert loop_finding(sec, DOMINANT)["block_class"] == "Layer"
