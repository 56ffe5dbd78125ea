"""Every fix `fxlens doctor` prints is one `fxlens fix` can try or states as code (issue 29).

Each finding carries its fix as data (`actions`, fxlens.report.fixes): a `config` switch torch
really has, a `hook` fix the re-run's child applies (fxlens.fix.child), or a `code` change stated
as a patch. The `fix` texts `fxlens diff` and the pytest budget plugin print come from the report's
recompile causes, which carry actions too. The slow test runs `fxlens fix` on a doctor session.
"""

from __future__ import annotations

import json
import shutil

import pytest
from doctor_helpers import SCRIPTS, fxlens
from schema_check import validate

from fxlens.budget.excess import _recompiles
from fxlens.diff.compare import compare
from fxlens.doctor.breaks import break_actions
from fxlens.doctor.finding import NO_ACTION
from fxlens.fix.appliers import APPLIERS, START, config_known
from fxlens.fix.findings import gather
from fxlens.report.build import build_report
from fxlens.report.fixes import FIXES, config_action, current, describe, how, key, target
from fxlens.trace.session import Session

# the doctor runs of the default suite (the same arguments as test_doctor_scripts.py: built once)
RUNS = [("recompiles",), ("hurts", "--rounds", "2"), ("helps", "--budget", "5")]


def _check_action(act: dict) -> None:
    assert act["kind"] in FIXES, act
    kind = how(act)
    if kind == "config":  # a switch torch has: the child sets it only when it exists
        assert config_known(act["params"]["name"]), act
    elif kind == "hook":
        assert act["kind"] in APPLIERS or act["kind"] in START, act
    else:
        assert kind == "code", act
    assert describe(act)  # the words `fxlens fix` prints for it format


def test_every_doctor_finding_carries_a_fix_to_try_or_state(doctored):
    seen = set()
    for args in RUNS:
        _, result = doctored(*args)
        for f in result["findings"]:
            seen.add(f["kind"])
            if f["kind"] in NO_ACTION:
                continue
            assert f["actions"], f
            for act in f["actions"]:
                _check_action(act)
    # the kinds these scripts produce (a busy machine may turn a speed verdict inconclusive)
    assert {"static_shapes_changing", "recompile_limit", "dynamic_unneeded", "graph_break"} <= seen
    assert "capture_only_backend" in seen


def test_doctor_findings_name_the_fixes_fix_tries(doctored):
    _, result = doctored("recompiles")
    kinds = {f["kind"]: f for f in result["findings"]}
    static = [a["kind"] for a in kinds["static_shapes_changing"]["actions"]]
    # `dynamic=False` at the call: torch.compile(dynamic=True) there, and the cause's mark_dynamic
    assert static[0] == "dynamic" and "mark_dynamic" in static
    (dyn,) = kinds["dynamic_unneeded"]["actions"]
    assert dyn["kind"] == "dynamic_default" and dyn["params"]["function"] == "fixed"
    assert dyn["params"]["site_key"] == f"{SCRIPTS / 'recompiles.py'}:18"
    (limit,) = kinds["recompile_limit"]["actions"]
    assert limit["params"]["name"] == "recompile_limit" and limit["params"]["value"] == 32


def test_hook_kinds_are_each_applied_by_one_applier():
    # one applier per hook kind, in a table (no if/elif on names): both ways
    hooks = {k for k, row in FIXES.items() if row.how == "hook"}
    assert hooks == set(APPLIERS) | (set(START) - {"config"})
    # one kind for every torch config switch (dynamo's, `inductor.X`, `functorch.X`)
    assert {k for k, row in FIXES.items() if row.how == "config"} == {"config"}
    assert "config" in set(START)
    for k in APPLIERS:
        assert callable(APPLIERS[k]), k


def test_break_actions():
    item = break_actions("Unsupported Tensor.item() call with capture_scalar_outputs=False", [], "keep it")
    assert [a["kind"] for a in item] == ["config", "keep_tensor"]
    assert item[0]["params"]["name"] == "capture_scalar_outputs"
    printed = break_actions("builtin: print", [], "move the `print` out", "/x/a.py", 3)
    assert printed == [
        {"kind": "change_code", "params": {"text": "move the `print` out", "site": "/x/a.py:3"}}
    ]
    hint = "Set `torch._dynamo.config.capture_dynamic_output_shape_ops = True` to trace it"
    lib = break_actions("some op", [hint], "set `torch._dynamo.config.x = True` before compiling")
    assert [(a["kind"], a["params"].get("name")) for a in lib] == [
        ("config", "capture_dynamic_output_shape_ops")
    ]


def test_budget_and_diff_fix_texts_are_the_actioned_causes(doctored):
    _, result = doctored("recompiles")
    report = build_report(Session.open(result["session"]))
    causes = report["recompile_causes"]
    assert causes and all(c["actions"] for c in causes)
    actioned = {c["fix"] for c in causes}
    # the pytest budget plugin's `fix:` lines under its recompiles
    fixes = [ln.split("fix: ", 1)[1] for ln in _recompiles(report) if ln.strip().startswith("fix: ")]
    assert fixes and set(fixes) <= actioned
    # fxlens diff's causes (JSON; its text prints no fix): the fix of a report cause, actioned there
    items = compare(report, report)["recompile_causes"]
    assert items and all(item["fix"] in actioned for item in items)


@pytest.mark.slow  # `fxlens fix` re-runs the script once per fix (~30 s on 2 busy cores)
def test_fix_tries_the_doctor_findings_fixes(doctored, tmp_path):
    _, result = doctored("recompiles")
    session = tmp_path / "session"
    shutil.copytree(result["session"], session)  # the built doctor session is read-only
    out = tmp_path / "fix.json"
    proc = fxlens(
        "fix", "--session", session, "--json", out, SCRIPTS / "recompiles.py", env_root=tmp_path / "s"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text())
    validate("fix", got)
    fixes = {r["kind"]: r for r in got["fixes"]}
    # doctor-only: dynamic_unneeded's hook, applied and measured in a re-run
    dyn = fixes["dynamic_default"]
    assert dyn["applied"] and dyn["verdict"] in ("helps", "no effect", "hurts") and dyn["outputs_equal"]
    # torch.compile(dynamic=True) for `grow`: its re-run's own trace holds no recompile
    grow = fixes["dynamic"]
    assert grow["applied"] and grow["verdict"] == "helps", grow
    assert not Session.open(grow["run"]).recompiles and len(Session.open(session).recompiles) >= 3
    assert fixes["config"]["applied"] and fixes["config"]["params"]["name"] == "recompile_limit"
    # doctor's code fixes are stated, not tried
    for kind in ("no_compile", "change_code"):
        assert fixes[kind]["how"] == "code" and fixes[kind]["verdict"] == "not tried"


def test_kinds_the_default_scripts_do_not_reach_carry_actions(tmp_path):
    """compiled_after_wrap, never_called (bypassed or not), compile_not_amortised: from rows as
    fxlens.probe.stats writes them (the scripts that reach them are slow: DDP, HF generate)."""
    from fxlens.doctor.findings import _usage_findings
    from fxlens.doctor.speed import _compile_not_amortised, _never_called

    script = tmp_path / "gen.py"
    script.write_text("import torch\nm = torch.compile(model)\nm.generate(x)\n")
    at = {"file": str(script), "line": 2}
    row = {
        "function": "Model.forward",
        "file": str(script),
        "compiled_at": at,
        "options": {"backend": "inductor"},
        "calls": 0,
        "distinct_shapes": 1,
        "wrapped_in": "DistributedDataParallel",
        "eager_ms": 2.0,
        "compiled_ms": 1.0,
        "compile_s": 3.0,
        "break_even_calls": 3000,
        "speedup": 2.0,
    }
    (wrap,) = _usage_findings([row], graphs=0)
    bypassed = _never_called(row)
    plain = _never_called({**row, "compiled_at": {"file": str(tmp_path / "none.py"), "line": 1}})
    short = _compile_not_amortised({**row, "calls": 10})
    got = {
        f["kind"] + ("" if f is not plain else "/plain"): f["actions"] for f in (wrap, bypassed, plain, short)
    }
    assert [a["kind"] for a in got["compiled_after_wrap"]] == ["compile_inside_ddp"]
    assert got["compiled_after_wrap"][0]["params"]["site_key"] == f"{script}:2"
    assert [a["kind"] for a in got["never_called"]] == ["compile_in_place"]
    assert [a["kind"] for a in got["never_called/plain"]] == ["change_code"]
    assert [a["kind"] for a in got["compile_not_amortised"]] == ["no_compile"]
    for acts in got.values():
        for act in acts:
            _check_action(act)


# doctor's memory causes as sessions before the one `config` kind wrote them
_OLD_MEMORY_ACTIONS = [
    {
        "kind": "torch_config",
        "params": {
            "module": "torch._functorch.config",
            "name": "activation_memory_budget",
            "value": 0.5,
            "target": "peak_memory",
        },
    },
    {
        "kind": "torch_config",
        "params": {
            "module": "torch._inductor.config",
            "name": "freezing",
            "value": False,
            "target": "peak_memory",
        },
    },
]


def test_an_old_torch_config_action_reads_as_the_one_config_kind():
    new = [
        config_action("functorch.activation_memory_budget", 0.5, "peak_memory"),
        config_action("inductor.freezing", False, "peak_memory"),
    ]
    assert [current(a) for a in _OLD_MEMORY_ACTIONS] == new
    # the same words, the same fix (one re-run for an old and a new session's finding)
    assert [describe(a) for a in _OLD_MEMORY_ACTIONS] == [
        "`torch._functorch.config.activation_memory_budget = 0.5`",
        "`torch._inductor.config.freezing = False`",
    ]
    assert [describe(a) for a in new] == [describe(a) for a in _OLD_MEMORY_ACTIONS]
    assert [key(a) for a in new] == [key(a) for a in _OLD_MEMORY_ACTIONS]
    assert all(how(a) == "config" and target(a) == ["peak_memory"] for a in _OLD_MEMORY_ACTIONS)
    # `fxlens fix --session` on an old doctor session: the findings' actions come back in the one kind
    findings = [{"message": "saves more", "file": "/x/m.py", "line": 3, "actions": _OLD_MEMORY_ACTIONS}]
    got = gather({}, "/x/m.py", doctor=findings)
    assert [e["action"] for e in got] == new and {e["how"] for e in got} == {"config"}


def test_the_config_applier_sets_the_memory_switches_torch_reads():
    # ground truth in a fresh interpreter: the switches as torch's own config modules hold them
    import subprocess
    import sys

    code = (
        "import json, torch._functorch.config as F, torch._inductor.config as I\n"
        "from fxlens.fix.appliers import START\n"
        "from fxlens.report.fixes import current\n"
        "I.freezing = True  # the old action turns it off: start from on\n"
        "before = F.activation_memory_budget\n"
        f"acts = {_OLD_MEMORY_ACTIONS!r}\n"
        "ok = [START[current(a)['kind']](current(a)['params']) for a in acts]\n"
        "print(json.dumps([ok, before, F.activation_memory_budget, I.freezing]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert json.loads(out.stdout) == [[True, True], 1.0, 0.5, False], out.stderr[-2000:]
