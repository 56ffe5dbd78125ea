"""A recompile's cause is the failed guard of the cache entry the call came nearest to.

Ground truth, two ways apart from fxlens: the script's own calls (each prints its grad mode,
train/eval and sizes, so the entries a call differs least from are counted here), and torch's
TORCH_LOGS=recompiles text of the same run (the failed guard torch lists for each entry).
"""

import json
import re

import pytest
from capture_helpers import SCRIPTS, fxlens

from fxlens.report.rootcause import root_causes
from fxlens.trace.session import Session

_LOG = re.compile(
    r"\[(?P<cid>\d+/\d+)\] \[__recompiles\]\s+- (?P<against>\d+/\d+): (?P<guard>.+?)\s*(?:#.*)?$"
)
_CALL = re.compile(r"^CALL (?P<fn>\w+) (?P<state>\{.*\})$")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("nearest")
    proc = fxlens(
        "run",
        "--session",
        base / "s",
        "--json",
        base / "r.json",
        SCRIPTS / "nearest_entry.py",
        env={"TORCH_LOGS": "recompiles"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, json.loads((base / "r.json").read_text()), base / "s"


def _torch_lists(stderr: str) -> dict[str, dict[str, str]]:
    """compile id -> {entry id: the guard torch says that entry failed}, from TORCH_LOGS text."""
    out: dict[str, dict[str, str]] = {}
    for line in stderr.splitlines():
        m = _LOG.search(line)
        if m:
            out.setdefault(m["cid"], {})[m["against"]] = m["guard"].strip()
    return out


def _kind(torch_text: str) -> str:
    """The three kinds of check this script makes torch fail, named from torch's own wording."""
    if torch_text.startswith("GLOBAL_STATE changed: grad_mode"):
        return "grad_mode"
    if re.match(r"tensor '\w+' size mismatch", torch_text):
        return "size"
    return "training" if ".training == " in torch_text else torch_text


def _nearest_by_calls(stdout: str) -> dict[str, set[str]]:
    """compile id -> the entries whose call state differs least from the recompiling call's, from the
    script's calls alone: a call compiles when no earlier compiled state equals its own."""
    frames: dict[str, list[dict]] = {}
    out: dict[str, set[str]] = {}
    order = []  # frame ids in the order functions first compile
    for line in stdout.splitlines():
        m = _CALL.match(line)
        if not m:
            continue
        fn, state = m["fn"], json.loads(m["state"])
        entries = frames.setdefault(fn, [])
        if fn not in order:
            order.append(fn)
        if state in entries:
            continue
        fid = order.index(fn)
        if entries:
            dist = [sum(state[k] != e[k] for k in state) for e in entries]
            out[f"{fid}/{len(entries)}"] = {f"{fid}/{i}" for i, d in enumerate(dist) if d == min(dist)}
        entries.append(state)
    return out


def test_each_recompile_is_filed_under_its_nearest_entrys_guard(run):
    proc, report, _ = run
    listed = _torch_lists(proc.stderr)
    nearest = _nearest_by_calls(proc.stdout)
    assert set(listed) == set(nearest) and len(nearest) == 9, (listed, nearest)
    filed = {cid: c for c in report["recompile_causes"] for cid in c["compile_ids"]}
    assert set(filed) == set(nearest)
    for cid, entries in nearest.items():
        allowed = {_kind(listed[cid][e]) for e in entries}
        assert filed[cid]["kind"] in allowed, (cid, filed[cid]["kind"], listed[cid])
    # the case the first-listed (most recently used) entry gets wrong: grad mode is listed first, the
    # call (no_grad, 6 elements) differs from the no_grad entry of 4 elements only in its size
    assert list(listed["0/3"].values())[0].startswith("GLOBAL_STATE changed: grad_mode")
    assert nearest["0/3"] == {"0/2"} and filed["0/3"]["kind"] == "size"
    assert filed["2/3"]["kind"] == "size" and filed["2/2"]["kind"] == "training"


def test_without_guard_trees_the_first_listed_new_guard_decides(run):
    # the same records without the entries' guard trees: no entry can be told nearer, and the
    # older rule (the first guard not seen before, else the first listed) files 0/3 under grad mode
    _, _, session = run
    rank = Session.open(session).ranks[0]
    causes = root_causes([r for r in rank.recompiles if r.function == "scale"])
    by_id = {cid: c.kind for c in causes for cid in c.compile_ids}
    assert by_id["0/3"] == "grad_mode"
