"""The bytecode torch logs of each code object it compiles (`<co_name>_ORIGINAL_BYTECODE`, and
`_MODIFIED_BYTECODE`: what Dynamo made of it), read as BytecodeDump records."""

from __future__ import annotations

import dis
import hashlib
import json
from pathlib import Path

from fxlens.trace.session import Session
from fxlens.tui.loader import artifact_label

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "traces" / "2.15.0" / "dedicated_log_torch_trace.log"


def test_a_real_trace_s_bytecode_dumps_are_read():
    s = Session.open(TRACE)
    logged = [
        json.loads(line.split("] ", 1)[1])["artifact"]["name"]
        for line in TRACE.read_text().split("\n")
        if "_BYTECODE" in line and not line.startswith("\t")
    ]
    assert [(d.code, d.stage) for d in s.bytecode_dumps] == [
        (n.rsplit("_", 2)[0], n.rsplit("_", 2)[1].lower()) for n in logged
    ]
    assert [d.compile_id for d in s.bytecode_dumps] == ["1/0", "1/0"]
    original, modified = s.bytecode_dumps
    assert 0 < original.instructions < modified.instructions  # Dynamo's code calls the graph too
    assert artifact_label("artifact:f_ORIGINAL_BYTECODE") == "bytecode (original)"


def _busy(xs):  # loops, a jump target, an exception handler: every shape of `dis` line
    total = 0
    for x in xs:
        try:
            total += 1 / x
        except ZeroDivisionError:
            continue
    return total


def test_the_instructions_are_those_dis_lists(tmp_path):
    # torch logs `dis.Bytecode(code).dis()` as the payload (torch/_dynamo/convert_frame.py)
    payload = dis.Bytecode(_busy.__code__).dis().rstrip("\n")
    meta = {
        "artifact": {"name": "_busy_ORIGINAL_BYTECODE", "encoding": "string"},
        "frame_id": 0,
        "frame_compile_id": 0,
        "attempt": 0,
        "has_payload": hashlib.md5(payload.encode()).hexdigest(),
    }
    log = tmp_path / "bytecode.log"
    body = "\n".join("\t" + ln for ln in payload.split("\n"))
    log.write_text(
        f"V1204 11:32:04.834000 15369 torch/_dynamo/convert_frame.py:1786] {json.dumps(meta)}\n{body}\n"
    )
    (dump,) = Session.open(log).bytecode_dumps
    assert (dump.compile_id, dump.code, dump.stage) == ("0/0", "_busy", "original")
    assert dump.instructions == len(list(dis.get_instructions(_busy)))
