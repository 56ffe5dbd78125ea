"""Symbolic sizes (`dynamic=True`): sizes are ints or sympy expressions over torch's size symbols.

AOTAutograd hands the backend fake tensors whose sizes are SymInts; their sympy expressions (`s77`,
`s27*s77`) are what the IR carries instead of ints. `render` prints them as Python/Triton integer
arithmetic (kernels take the symbols as scalar arguments, the wrapper computes them from its
inputs). Decisions that need a number (block sizes, index sampling for fusion, byte counts) use the
symbols' hints (the sizes of the first call), bound by `bind` for the duration of one compile; such
decisions only ever pick among choices that are correct for every size. What cannot be expressed
raises `SymbolicUnsupported`, and the graph falls back to per-shape specialization.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

import sympy
import torch


class SymbolicUnsupported(Exception):
    """A graph cannot be compiled with symbolic sizes (reason in the message)."""


# symbol -> hint of the graph being compiled
_HINTS: contextvars.ContextVar = contextvars.ContextVar("fxlens_size_hints", default=None)
# expression -> name of a size the wrapper precomputes (Max/Min: no common Python/Triton text)
_DERIVED: contextvars.ContextVar = contextvars.ContextVar("fxlens_derived_sizes", default=None)


@contextlib.contextmanager
def bind(hints: dict) -> Iterator[None]:
    token = _HINTS.set(dict(hints))
    token2 = _DERIVED.set({})
    try:
        yield
    finally:
        _HINTS.reset(token)
        _DERIVED.reset(token2)


def derived() -> list[tuple[str, str]]:
    """(name, Python code) of the sizes the wrapper precomputes, in order of first use."""
    return [(name, _python(e)) for e, name in (_DERIVED.get() or {}).items()]


def _python(e) -> str:
    args = ", ".join(render(a) for a in e.args)
    return f"{type(e).__name__.lower()}({args})"


def hints_of(values) -> dict:
    """Hints of every size symbol among `values` (SymInts, or tensors with SymInt sizes)."""
    out: dict = {}
    for a in values:
        syms = [a] if isinstance(a, torch.SymInt) else []
        if isinstance(a, torch.Tensor):
            syms = [s for s in (*a.shape, *a.stride(), a.storage_offset()) if isinstance(s, torch.SymInt)]
        for s in syms:
            env = s.node.shape_env
            table = getattr(env, "backed_var_to_val", None) or env.var_to_val  # renamed in torch 2.13
            for sym in s.node.expr.free_symbols:
                if sym in table:
                    out[sym] = int(table[sym])
    return out


def size(s):
    """A size as the IR keeps it: an int, or a sympy expression when it is symbolic. A SymFloat
    computed from sizes (batch norm's n / (n - 1)) is kept as a float expression the same way."""
    if isinstance(s, (torch.SymInt, torch.SymFloat)):
        s = s.node.expr
    if isinstance(s, sympy.Basic):
        if not s.free_symbols:
            if s.is_Integer:
                return int(s)
            if s.is_Float:
                return float(s)
            raise SymbolicUnsupported(f"size expression {s} is not a number")
        return s
    if isinstance(s, torch.SymBool):
        raise SymbolicUnsupported(f"symbolic {type(s).__name__} {s}")
    return int(s) if not isinstance(s, float) else s


def sizes(shape) -> tuple:
    return tuple(size(s) for s in shape)


def is_static(*xs) -> bool:
    return all(not isinstance(x, sympy.Basic) for x in xs)


def hint(e) -> int:
    """The value of `e` at the current hints (an int stays as it is)."""
    if not isinstance(e, sympy.Basic):
        return int(e)
    table = _HINTS.get() or {}
    missing = e.free_symbols - set(table)
    if missing:
        raise SymbolicUnsupported(f"no hint for {sorted(map(str, missing))} in {e}")
    return int(e.xreplace(table))


def bindings() -> list[dict]:
    """Symbol values to sample index expressions at: the hints, and distinct small values per
    symbol (so two different symbols that happen to share a hint are still told apart)."""
    table = _HINTS.get() or {}
    alt = {sym: 3 + 2 * i for i, sym in enumerate(sorted(table, key=str))}
    out = []
    for env in (table, alt):
        d = {str(k): v for k, v in env.items()}
        d.update({name: int(e.xreplace(env)) for e, name in (_DERIVED.get() or {}).items()})
        out.append(d)
    return out


def symbol_names() -> set[str]:
    return {str(s) for s in (_HINTS.get() or {})} | set((_DERIVED.get() or {}).values())


def render(e) -> str:
    """Integer arithmetic text for `e`, valid in the Python wrapper and in Triton kernels."""
    if isinstance(e, bool) or not isinstance(e, (int, sympy.Basic)):
        raise SymbolicUnsupported(f"not an integer size: {e!r}")
    if isinstance(e, int):
        return str(e)
    if e.is_Integer:
        return str(int(e))
    if e.is_Float:
        return repr(float(e))
    if e.is_Symbol:
        return e.name
    if e.is_Add:
        return "(" + " + ".join(render(a) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + "*".join(render(a) for a in e.args) + ")"
    if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
        return "(" + "*".join([render(e.base)] * int(e.exp)) + ")"
    fname = type(e).__name__
    if fname in ("IntTrueDiv", "FloatTrueDiv"):  # float results (Triton's / of ints is a float division)
        return f"({render(e.args[0])} / {render(e.args[1])})"
    if fname == "ToFloat":
        return f"({render(e.args[0])} * 1.0)"
    table = _DERIVED.get()
    if fname in ("Max", "Min") and table is not None:  # precomputed by the wrapper, a kernel argument
        for a in e.args:
            render(a)  # its operands first: a nested Max gets the smaller name
        return table.setdefault(e, f"ps{len(table)}")
    # Triton's // and % truncate toward zero, Python's floor: emitted only for non-negative operands
    if fname in ("FloorDiv", "Mod", "PythonMod") and all(a.is_nonnegative for a in e.args):
        op = "//" if fname == "FloorDiv" else "%"
        return f"({render(e.args[0])} {op} {render(e.args[1])})"
    if fname == "ModularIndexing" and all(a.is_nonnegative for a in e.args):
        base, div, mod = (render(a) for a in e.args)
        return f"(({base} // {div}) % {mod})"
    if fname in ("FloorDiv", "Mod", "PythonMod", "ModularIndexing"):
        raise SymbolicUnsupported(
            f"size expression {e} ({fname}) may have a negative operand (Triton's // and % truncate, Python's floor)"
        )
    raise SymbolicUnsupported(f"size expression {e} ({fname}) has no integer rendering")


def evaluate(e, env: dict) -> int:
    """`e` at concrete symbol values `env` (name -> int), for run-time use (hooks, launch checks)."""
    if not isinstance(e, sympy.Basic):
        return int(e)
    return int(eval(render(e), {"__builtins__": {}}, env))  # noqa: S307 - our own rendered arithmetic


_WORD = re.compile(r"[A-Za-z_]\w*")


def used_symbols(text: str) -> list[str]:
    """The size symbols named in generated code `text`, sorted (a stable kernel signature)."""
    known = symbol_names()
    return sorted({w for w in _WORD.findall(text) if w in known}, key=lambda n: (len(n), n))


def smax1(s):
    """max(s, 1) for a size (a symbolic size is taken as it is: torch specializes sizes 0 and 1)."""
    return s if not is_static(s) else max(s, 1)
