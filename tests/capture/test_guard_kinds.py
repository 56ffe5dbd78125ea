"""Every kind of failed guard torch 2.13.0, 2.14.1 and 2.15.0 emit, as they wrote it
(tests/data/guards/<version>.log, recorded by record_guards.py beside it: one case per way to make a
function recompile), read by fxlens.trace.guards: the kind each case is known to cause, the source in
the user's words, and a cause that shows torch's own guard (never "a guard changed")."""

from pathlib import Path

import pytest

from fxlens.report.rootcause import root_causes
from fxlens.trace.guards import parse_failed_guard
from fxlens.trace.records import Recompile

DATA = Path(__file__).parents[1] / "data" / "guards"
VERSIONS = sorted(p.stem for p in DATA.glob("*.log"))

# case (what the recording script changed between calls) -> the kind of its first failed guard,
# and the name the user wrote (ground truth: the script's own code)
EXPECTED = {
    "size": ("size", "x"),
    "ndim": ("ndim", "x"),
    "stride": ("stride", "x"),
    "dtype": ("dtype", "x"),
    "requires_grad": ("requires_grad", "x"),
    "grad_mode": ("grad_mode", ""),
    "autocast": ("autocast", ""),
    "int_arg": ("value", "k"),
    "float_arg": ("value", "k"),
    "bool_arg": ("value", "k"),
    "list_len": ("length", "xs"),
    "global": ("global", "FLAG"),
    "item": ("item_value", "___stack0"),
    "training": ("training", "s.drop"),
    "module_int_attr": ("module_attr", "s.k"),
    "module_forward_kwargs": ("size", "x"),
    "function_id": ("identity", "fn"),
    "default_dtype": ("default_dtype", ""),
    "deterministic": ("deterministic", ""),
    "dynamic_range": ("size", "x"),
    "mark_dynamic_then_0d": ("size_branch", "x"),
    "dict_key": ("length", "d"),
    "str_arg": ("value", "mode"),
    "threads": ("num_threads", ""),
}


def _cases(version: str) -> dict[str, list[str]]:
    cases: dict[str, list[str]] = {}
    current = None
    for line in (DATA / f"{version}.log").read_text().splitlines():
        if line.startswith("=== "):
            current = cases.setdefault(line[4:].strip(), [])
        elif line.startswith("- ") and current is not None:
            current.append(line[2:])
    return cases


@pytest.mark.parametrize("version", VERSIONS)
def test_every_case_read_as_its_kind(version):
    cases = _cases(version)
    recorded = {c for c, lines in cases.items() if lines}
    assert recorded >= set(EXPECTED) - {"none_vs_tensor_kw"}, set(EXPECTED) - recorded
    for case, (kind, name) in EXPECTED.items():
        g = parse_failed_guard(cases[case][0])
        assert (g.kind, g.name) == (kind, name), (case, cases[case][0], g)


@pytest.mark.parametrize("version", VERSIONS)
def test_size_one_after_a_dynamic_dim_is_zero_one_specialisation(version):
    g = parse_failed_guard(_cases(version)["size"][1])  # 2 <= x.size()[0], with torch's comment
    assert (g.kind, g.name, g.dim) == ("size_one", "x", "0")
    assert "mark_unbacked" in g.hint


@pytest.mark.parametrize("version", VERSIONS)
def test_every_cause_shows_torchs_guard(version):
    for case, lines in _cases(version).items():
        if not lines:
            continue
        (cause, *_) = root_causes([Recompile("0/1", None, case, "m.py", 1, tuple(lines))])
        assert cause.guard and cause.guard in lines[0], case
        assert cause.kind != "other" and "a guard changed" not in cause.message, case


def test_an_unknown_guard_still_shows_torchs_text():
    (cause,) = root_causes([Recompile("0/1", None, "f", "m.py", 1, ("0/0: ___check_new_thing(L['x'], 7)",))])
    assert cause.kind == "other" and "___check_new_thing(L['x'], 7)" in cause.subject + cause.fix
