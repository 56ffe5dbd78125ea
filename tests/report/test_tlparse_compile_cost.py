"""Compile seconds and cache outcomes on pytorch/tlparse's own test inputs (tests/data/tlparse/, copied
from pytorch/tlparse tests/inputs under its BSD-3 license: LICENSE; multi_rank_logs trimmed by
tests/data/trim_tlparse.py --bulky).

Ground truth: what tlparse's tests/integration_test.rs asserts on the same files (which cache artifacts
compile 1/0 of cache_hit_miss.log logged; the cache divergence warning on two ranks that differ, none
on two ranks that agree, more than two groups on multi_rank_logs), and torch's own fields read here
straight from each log's JSON, independently of fxlens's reader.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fxlens.report.build import build_report
from fxlens.trace.session import Session

DATA = Path(__file__).resolve().parents[1] / "data" / "tlparse"


def _records(log: Path, key: str) -> list[dict]:
    """Every `key` record's body in LOG, decoded here with nothing but json."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        i = line.find("] {")
        if i > 0 and f'"{key}"' in line[i : i + 40]:
            out.append(json.loads(line[i + 2 :])[key])
    return out


def _times(path: Path) -> dict:
    return build_report(Session.open(path), with_guards=False)["compile_times"]


def test_simple_log_reports_its_cumulative_stage_times():
    # simple.log's one compilation_metrics record has no entire_frame_compile_time_s, only torch's
    # cumulative per-stage fields: its frame's time is Dynamo's cumulative time (1.66 s)
    (m,) = _records(DATA / "simple.log", "compilation_metrics")
    assert "entire_frame_compile_time_s" not in m
    ct = _times(DATA / "simple.log")
    (row,) = ct["per_compile"]
    assert (
        row["total_s"]
        == pytest.approx(m["dynamo_cumulative_compile_time_us"] / 1e6)
        == pytest.approx(1.659332)
    )
    assert row["backend_s"] == pytest.approx(m["aot_autograd_cumulative_compile_time_us"] / 1e6)
    assert row["inductor_s"] == pytest.approx(m["inductor_cumulative_compile_time_us"] / 1e6)
    assert row["time_source"] == "dynamo_cumulative_compile_time_us"
    assert ct["total_s"] == pytest.approx(1.6593, abs=1e-4)
    assert ct["cold_start"]["message"].startswith("1.66 s compiling over 1 compile(s)")
    # its one FX-graph cache artifact: a miss (the ❌ tlparse's cache sequence has for it)
    assert row["cache_outcomes"] == {"fx_graph": "miss"}


def test_cache_hit_miss_log_outcomes_and_bypass_reason():
    # tlparse's test_cache_hit_miss: compile 1/0 logged fx_graph_cache_miss, _hit and _miss artifacts
    ct = _times(DATA / "cache_hit_miss.log")
    # logged three times after torch._dynamo.reset(): 1/0, 1/0#2, 1/0#3 (fxlens.trace.reader)
    rows = [r for r in ct["per_compile"] if r["compile_id"].split("#")[0] == "1/0"]
    assert [c["outcome"] for r in rows for c in r["caches"] if c["cache"] == "fx_graph"] == [
        "miss",
        "hit",
        "miss",
    ]
    bypass = [c for r in rows for c in r["caches"] if c["cache"] == "aotautograd"]
    assert {c["outcome"] for c in bypass} == {"bypass"} and len(bypass) == 3
    assert bypass[0]["reason"].startswith("Unsupported call_function target flex_attention")
    hit = next(c for r in rows for c in r["caches"] if c["outcome"] == "hit")
    assert hit["saved_s"] == pytest.approx(4.009141776)
    # the hit's compile is the short one: its inductor time is a tenth of a miss's
    hit_row = next(r for r in rows if any(c["outcome"] == "hit" for c in r["caches"]))
    assert hit_row["inductor_s"] < 0.1 < min(r["inductor_s"] for r in rows if r is not hit_row)
    assert [b["cache"] for b in ct["cache_bypasses"]] == ["aotautograd"]


def test_autotune_log_total_is_the_whole_frame():
    (m,) = _records(DATA / "autotune_with_compile_id.log", "compilation_metrics")
    (row,) = _times(DATA / "autotune_with_compile_id.log")["per_compile"]
    assert row["total_s"] == pytest.approx(m["entire_frame_compile_time_s"]) == pytest.approx(2.073305)
    assert row["time_source"] == "entire_frame_compile_time_s"
    assert row["cache_outcomes"] == {"fx_graph": "miss", "aotautograd": "miss"}


def test_aot_inductor_logs_without_a_compile_id():
    # the old log's record has inductor's time (27.4 s) and duration_us; the newer one has only its
    # start and end, and the chromium (dynamo_timed) events inductor_compile and compile_fx_aot
    (old,) = _times(DATA / "inductor_provenance_aot_log_old.txt")["per_compile"]
    assert old["inductor_s"] == pytest.approx(27.378327) and old["total_s"] == pytest.approx(28.670269)
    (m,) = _records(DATA / "inductor_provenance_aot_log.txt", "compilation_metrics")
    (new,) = _times(DATA / "inductor_provenance_aot_log.txt")["per_compile"]
    assert new["total_s"] == pytest.approx((m["end_time_us"] - m["start_time_us"]) / 1e6)
    assert new["inductor_s"] == pytest.approx(10.28986, abs=1e-4)  # inductor_compile B .. E
    assert new["stages_s"]["aot_inductor"] == pytest.approx(15.947588, abs=1e-4)  # compile_fx_aot


def _two_ranks(tmp_path: Path, first: str, second: str) -> Path:
    d = tmp_path / f"{first}-{second}"
    d.mkdir()
    shutil.copy(DATA / first, d / "dedicated_log_torch_trace_rank_0.log")
    shutil.copy(DATA / second, d / "dedicated_log_torch_trace_rank_1.log")
    return d


def test_cache_divergence_as_tlparse_warns(tmp_path):
    # tlparse's test_diverging_cache_events_warning / test_no_cache_event_divergence
    differ = _times(_two_ranks(tmp_path, "cache_hit_miss.log", "simple.log"))["cache_divergence"]
    assert differ["diverges"] and len(differ["groups"]) == 2
    same = _times(_two_ranks(tmp_path, "cache_hit_miss.log", "cache_hit_miss.log"))["cache_divergence"]
    assert not same["diverges"] and len(same["groups"]) == 1


def test_multi_rank_logs_cache_groups_in_text_and_json(tmp_path):
    # tlparse's test_diverging_cache_events_multiple_groups: more than two groups
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fxlens.cli", "report", str(DATA / "multi_rank_logs"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    div = json.loads(out.read_text())["compile_times"]["cache_divergence"]
    groups = {tuple(g["ranks"]): g for g in div["groups"]}
    assert div["diverges"] and set(groups) == {(0, 2), (1,), (3,)}
    # rank 1 missed both caches from its compile 0/10 on; rank 3 hit every lookup
    seq1 = groups[(1,)]["sequence"]
    assert seq1[20:22] == ["0/10 fx_graph miss", "0/10 aotautograd miss"]
    assert all(s.endswith(" hit") for s in groups[(3,)]["sequence"])
    assert "Cache hit/miss patterns diverge across ranks" in proc.stdout
    assert "Where cold start goes:" in proc.stdout


def test_recompile_share_and_per_rank_from_torchs_own_times():
    # multi_rank_logs rank 1 compiled frame 0 fifteen times (0/0 .. 0/14): every compile after the
    # first is a recompile; the sums are taken here from torch's records directly
    logs = sorted((DATA / "multi_rank_logs").glob("*.log"))
    ct = _times(DATA / "multi_rank_logs")
    for log in logs:
        rank = int(log.stem.rsplit("_", 1)[-1])
        ms = _records(log, "compilation_metrics")
        # the whole frame's time, or (ranks 0 and 2 log no whole-frame field) Dynamo's cumulative time
        secs = [
            m.get("entire_frame_compile_time_s") or m["dynamo_cumulative_compile_time_us"] / 1e6 for m in ms
        ]
        total = sum(secs)
        again = sum(s for s, m in zip(secs, ms) if not str(m.get("compile_id", "0/0")).endswith("/0"))
        (row,) = [r for r in ct["per_rank"] if r["rank"] == rank]
        assert row["total_s"] == pytest.approx(total) and row["recompile_s"] == pytest.approx(again)
        assert row["compiles"] == len(ms)
    cs = ct["cold_start"]  # the slowest rank's
    slowest = max(ct["per_rank"], key=lambda r: r["total_s"])
    assert cs["rank"] == slowest["rank"] and cs["recompile_s"] == pytest.approx(slowest["recompile_s"])
    assert cs["recompile_share"] == pytest.approx(slowest["recompile_s"] / slowest["total_s"], abs=1e-4)
