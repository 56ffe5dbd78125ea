"""fxlens.trace.timedevents.chromium_events: which lines of a log are chromium_event records and
what their payloads decode to, on a log written by hand with the edge cases of torch's format."""

from __future__ import annotations

import json

from fxlens.trace.timedevents import chromium_events, timed_events

HEAD = "V1206 10:00:00.000000 1 torch/_logging/structured.py:28] "


def _rec(meta: dict, payload: str | None = None) -> str:
    out = HEAD + json.dumps(meta) + "\n"
    if payload is not None:
        out += "".join("\t" + line + "\n" for line in payload.split("\n"))
    return out


def _event(name, ph, ts, cid="0/0"):
    return json.dumps({"name": name, "ph": ph, "ts": ts, "args": {"compile_id": cid}}, indent=1)


def test_records_payloads_and_what_is_not_a_header(tmp_path):
    log = tmp_path / "t.log"
    text = (
        _rec({"chromium_event": {}, "has_payload": "x"}, _event("dynamo", "B", 0))
        # another record whose payload mentions the mark: that payload line is tested as a header,
        # as torch's reader would find it (a TAB line outside a chromium payload)
        + _rec({"artifact": {"name": "x"}}, '] {"chromium_event": {}} not json')
        # a chromium payload that holds the mark: it is payload, not a second record
        + _rec(
            {"chromium_event": {}},
            '{"name": "inductor_compile", "ph": "B", "ts": 5,\n'
            ' "note": "] {\\"chromium_event\\"", "args": {"compile_id": "0/0"}}',
        )
        # the mark past the line's first 300 bytes: not a header
        + "V"
        + "x" * 300
        + '] {"chromium_event": {}}\n\t{"name": "far", "ph": "B", "ts": 1}\n'
        + _rec({"chromium_event": {}}, "not json")
        + _rec(
            {"chromium_event": {}},
            '{"name": "inductor_compile", "ph": "E", "ts": 2000005, "args": {"compile_id": "0/0"}}',
        )
        + _rec({"chromium_event": {}, "frame_id": 0})  # no payload
        + _rec({"chromium_event": {}}, _event("dynamo", "E", 3000000))
    )
    log.write_text(text.rstrip("\n"))  # the last payload line without its newline
    got = list(chromium_events(log))
    assert [(e["name"], e["ph"]) for e in got] == [
        ("dynamo", "B"),
        ("inductor_compile", "B"),
        ("inductor_compile", "E"),
        ("dynamo", "E"),
    ]
    assert got[1]["note"] == '] {"chromium_event"'
    ev = {e.name: (e.stage, e.depth, e.incl_s, e.self_s) for e in timed_events(log)["0/0"]}
    assert ev == {"inductor_compile": ("inductor", 1, 2.0, 2.0), "dynamo": ("dynamo", 0, 3.0, 1.0)}


def test_empty_and_missing_logs(tmp_path):
    empty = tmp_path / "e.log"
    empty.write_bytes(b"")
    assert list(chromium_events(empty)) == []
    assert timed_events(tmp_path / "missing.log") == {}
