"""fxlens.trace.classcode: dataclasses made under `cached()` are the dataclasses Python makes, and a
second process compiles none of their methods again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from fxlens.trace import classcode

# a class with what the records use: frozen, defaults, a default_factory, a nested dataclass
SOURCE = textwrap.dedent(
    """
    import builtins, dataclasses, json, sys
    from fxlens.trace import classcode

    classcode._path = lambda name: sys.argv[1]
    compiled = []
    real_compile = builtins.compile
    builtins.compile = lambda *a, **k: (compiled.append(a[0]), real_compile(*a, **k))[1]

    def make():
        @dataclasses.dataclass(frozen=True)
        class Frame:
            file: str
            line: int = 0
            tags: tuple = ()
            extra: list = dataclasses.field(default_factory=list, hash=False)

        @dataclasses.dataclass
        class Holder:
            frame: Frame
            n: int = 1
        return Frame, Holder

    with classcode.cached("t"):
        Frame, Holder = make()
    builtins.compile = real_compile
    PFrame, PHolder = make()  # the same definitions, made by dataclasses alone

    def behaviour(Frame, Holder):
        a, b = Frame("x.py", 3, ("t",)), Frame("x.py", 3, ("t",))
        try:
            a.line = 4
            frozen = False
        except dataclasses.FrozenInstanceError:
            frozen = True
        h = Holder(a)
        h.n = 5
        return [repr(a).replace("make.<locals>.", ""), a == b, hash(a) == hash(b), a == Frame("y.py"), frozen,
                Frame("z").extra is not Frame("z").extra, repr(h).replace("make.<locals>.", ""), h == Holder(b, 5),
                [f.name for f in dataclasses.fields(Holder)], dataclasses.asdict(h)]

    print(json.dumps({"cached": behaviour(Frame, Holder), "plain": behaviour(PFrame, PHolder),
                      "compiled": len(compiled)}))
    """
)


def _run(table, env=None):
    import json

    out = subprocess.run(
        [sys.executable, "-c", SOURCE, str(table)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout
    return json.loads(out)


def test_same_behaviour_and_no_compile_the_second_time(tmp_path):
    table = tmp_path / "t.marshal"
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    first = _run(table, env)
    assert first["cached"] == first["plain"]
    assert first["compiled"] > 0 and table.is_file()
    second = _run(table, env)
    assert second["cached"] == second["plain"] == first["plain"]
    assert second["compiled"] == 0  # every method came from the table


def test_bytecode_writing_off_writes_no_table(tmp_path):
    table = tmp_path / "t.marshal"
    got = _run(table, {"PYTHONDONTWRITEBYTECODE": "1"})
    assert got["cached"] == got["plain"] and not table.exists()


def test_a_damaged_table_is_ignored_and_replaced(tmp_path):
    table = tmp_path / "t.marshal"
    table.write_bytes(b"\x00not marshal")
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    got = _run(table, env)
    assert got["cached"] == got["plain"] and got["compiled"] > 0
    assert _run(table, env)["compiled"] == 0


def test_the_exec_hook_is_removed_after(tmp_path, monkeypatch):
    import dataclasses

    monkeypatch.setattr(classcode, "_path", lambda name: str(tmp_path / "t.marshal"))
    with classcode.cached("t"):
        assert dataclasses.exec is not None
    assert not hasattr(dataclasses, "exec")
