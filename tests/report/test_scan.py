"""fxlens.trace.reader.scan_log against a plain line-by-line reading of the same bytes.

The scan steps over payload lines in C (a regular expression over the mapped file); the ground truth
here is the obvious loop: every line, its number, where each record's TAB-prefixed payload lines
begin and end. Logs with the awkward edges of real files (no final newline, a torn record, blank
lines, CRLF line ends, a payload line before any record, an empty file) must agree exactly.
"""

from pathlib import Path

import pytest

from fxlens.trace.reader import scan_log

DATA = Path(__file__).resolve().parents[1] / "data" / "tlparse"
SIMPLE = (DATA / "simple.log").read_bytes()
EDGES = {
    "as_is": SIMPLE,
    "no_final_newline": SIMPLE.rstrip(b"\n"),
    "torn": SIMPLE[: len(SIMPLE) // 2],
    "blank_lines": b"\n\n" + SIMPLE + b"\n\n\t\n",
    "payload_first": b"\tstray\n" + SIMPLE,
    "crlf": SIMPLE.replace(b"\n", b"\r\n"),
    "payload_lines_only": b"\tx\n\ty",
    "empty": b"",
}


def _by_hand(data: bytes):
    """(line count, {record line number: payload byte span or None}) by the obvious loop."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    spans, offset, current, start = {}, 0, None, None
    for no, line in enumerate(lines, 1):
        if line.startswith(b"\t"):
            start = offset if current is not None and start is None else start
        else:
            if current is not None:
                spans[current] = (start, offset) if start is not None else None
            current, start = no, None
        offset += len(line) + 1
    if current is not None:
        spans[current] = (start, len(data)) if start is not None else None
    return len(lines), spans


@pytest.mark.parametrize("name", EDGES)
def test_scan_finds_every_line_and_payload_span(name, tmp_path):
    log = tmp_path / f"{name}.log"
    log.write_bytes(EDGES[name])
    scan = scan_log(log)
    lines, spans = _by_hand(EDGES[name])
    assert scan.lines == lines
    for rec in scan.records:
        if "has_payload" in rec.meta and rec.payload_span is not None:
            assert spans[rec.line_no] == rec.payload_span, rec.line_no
    # a record that announced a payload but had none is counted, with its line
    missing = [n for n, why in scan.bad if "no payload" in why]
    assert all(spans[n] is None for n in missing)
    if name == "torn":  # cut inside a payload or a record line: the scan still reads what came before
        assert scan.records
    if name == "as_is":
        assert len(scan.records) > 10 and all(r.payload() for r in scan.records if r.payload_span)


def test_a_payload_cut_short_is_not_intact(tmp_path):
    # torch's md5 of each payload (`has_payload`) against its text: whole, it matches; a log cut at
    # a line boundary inside the last payload (a killed job) leaves that payload short of it
    from fxlens.trace.payloads import intact

    whole = scan_log(DATA / "simple.log")
    with_payload = [r for r in whole.records if r.payload_span]
    assert with_payload and all(intact(r) for r in with_payload)
    last = with_payload[-1]
    start, end = last.payload_span
    cut = SIMPLE[:start] + SIMPLE[start:end].split(b"\n", 1)[0] + b"\n"
    assert cut != SIMPLE[:end]
    (tmp_path / "cut.log").write_bytes(cut)
    short = [r for r in scan_log(tmp_path / "cut.log").records if r.line_no == last.line_no][0]
    assert not intact(short)
