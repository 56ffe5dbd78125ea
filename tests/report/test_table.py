"""fxlens.report.texttable against the `tabulate` package itself: the same text, cell for cell."""

import random

import pytest
from tabulate import tabulate as reference

from fxlens.report.texttable import tabulate

CELLS = [
    None,
    "",
    0,
    7,
    -3,
    12345,
    0.5,
    17.45,
    0.0651,
    1234567.0,
    1e-7,
    float("inf"),
    "12",
    " 4",
    "0.68",
    "0/0",
    "[0/1]",
    "x",
    "TinyMLP.forward",
    "a b  c",
    "0.68x [0.66, 0.71]",
    "3-5",
    "1e5",
    "nan",
    "f.py:23",
    "\u4e2d\u6587",
    "\u00e9t\u00e9",
    "-",
    "inf",
    "-2.50",
    " pad ",
]


def _table(rng: random.Random):
    ncols = rng.randrange(1, 6)
    # a column draws from a few kinds of cells, so numeric, mixed and text columns all occur
    pools = [rng.sample(CELLS, rng.randrange(1, 5)) for _ in range(ncols)]
    rows = [[rng.choice(p) for p in pools] for _ in range(rng.randrange(0, 6))]
    headers = [rng.choice(["", "n", "compile id", "where", "speedup [95% CI]"]) for _ in range(ncols)]
    return rows, headers


@pytest.mark.parametrize("seed", range(6))
def test_simple_tables_match_the_tabulate_package(seed):
    rng = random.Random(seed)
    for _ in range(150):
        rows, headers = _table(rng)
        assert tabulate(rows, headers=headers, tablefmt="simple") == reference(
            rows, headers=headers, tablefmt="simple"
        ), (rows, headers)


@pytest.mark.parametrize("seed", range(3))
def test_text_only_tables_match_the_tabulate_package(seed):
    # disable_numparse: every column is text, numbers left-aligned as written
    rng = random.Random(seed)
    for _ in range(150):
        rows, headers = _table(rng)
        assert tabulate(rows, headers=headers, disable_numparse=True) == reference(
            rows, headers=headers, tablefmt="simple", disable_numparse=True
        ), (rows, headers)


def test_report_and_doctor_tables_match():
    # the shapes fxlens prints: counts, locations, floats of several magnitudes, empty cells
    rows = [
        [
            "TinyMLP.forward",
            "demo_model.py:30",
            3,
            0.0651,
            0.0964,
            "0.68x [0.66, 0.71]",
            "slower",
            17.45,
            None,
        ],
        ["f", "x.py:1", 120, 12.5, 1.25, "10.00x [9.80, 10.20]", "faster", 0.5, 282],
    ]
    headers = [
        "function",
        "compiled at",
        "calls",
        "eager ms",
        "compiled ms",
        "speedup",
        "verdict",
        "s",
        "pays",
    ]
    assert tabulate(rows, headers=headers) == reference(rows, headers=headers, tablefmt="simple")
    with pytest.raises(ValueError):
        tabulate(rows, headers=headers, tablefmt="grid")


@pytest.mark.parametrize("log", ["simple.log", "cache_hit_miss.log", "comp_failure.log"])
def test_report_text_is_what_the_tabulate_package_prints(log, monkeypatch):
    from pathlib import Path

    import fxlens.report.document as document
    from fxlens.report.build import build_report
    from fxlens.report.text import render_text
    from fxlens.trace.session import Session

    report = build_report(Session.open(Path(__file__).parents[1] / "data" / "tlparse" / log))
    ours = render_text(report)
    monkeypatch.setattr(document, "tabulate", reference)  # every table of the report is a Table block
    assert ours == render_text(report)
