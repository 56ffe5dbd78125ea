"""The words of a bisect verdict: its one-line summary, the next command to run, and the text report.

Pure functions of the verdict dict that `fxlens.bisect.command.bisect_script` returns (and
`--json` writes); `fxlens bisect` prints them, `fxlens demo` shows them.
"""

from __future__ import annotations

import shlex

from fxlens.trace.userframes import short_path

# -- text ----------------------------------------------------------------------------------------


def summary_line(r: dict) -> str:
    """One line for the session's event and the report."""
    outcome = r.get("outcome")
    runs = r.get("runs")
    if outcome == "nothing_fails":
        other = next((s for s in r.get("stages") or [] if s.get("error")), None)
        if other:  # it failed, in a way this --check does not follow
            return (
                f"no {r.get('check')} failure with {r.get('backend')}, but it fails otherwise: "
                f"{other['error']} (try --check auto; {runs} run)"
            )
        return f"nothing fails with {r.get('backend')} (check {r.get('check')}; {runs} run)"
    if outcome == "script_fails":
        return f"the script fails without torch.compile too: not a compiler problem ({runs} runs)"
    if outcome == "flaky":
        return f"flaky: {r.get('first_failing_stage')} failed, then passed on a re-run ({runs} runs)"
    c = r.get("culprit") or {}
    where = f"graph {c.get('compile_id')} ({c.get('function')})" if c.get("compile_id") else "no single graph"
    kernel = f", kernel {c['kernel']} [{', '.join(c.get('ops') or [])}]" if c.get("kernel") else ""
    if outcome == "eager_fails":
        return (
            f"eager fails, the script without torch.compile passes: Dynamo's capture, {where} ({runs} runs)"
        )
    failure = r.get("failure") or {}
    kind = failure.get("kind", "failure")
    if failure.get("vs_eager"):  # the call compared with eager says it best: "eager raises X, S ..."
        kind = failure["vs_eager"] + ":"
    cb = r.get("compiler_bisector") or {}
    torch_part = ""
    if cb.get("subsystem"):
        num = f" #{cb['bisect_number']}" if cb.get("bisect_number") is not None else ""
        info = (
            f" ({cb['debug_info']})" if cb.get("debug_info") and cb["debug_info"] != cb["subsystem"] else ""
        )
        torch_part = f", CompilerBisector: {cb['subsystem']}{num}{info}"
    elif cb.get("budget_spent"):
        torch_part = f", CompilerBisector stopped at its {cb.get('budget_s') or 0:.0f}s budget"
    if site := failure.get("site"):
        torch_part += f", raised in {site['function']}"
    stage = r.get("first_failing_stage")
    g = r.get("graph") or {}
    if outcome == "needs_several_graphs":
        where = (
            f"no single graph: graphs #{g.get('ordinal')}-#{g.get('to')} of {g.get('of')} fail only together"
        )
    closer = closer_clause(failure.get("eager_diff"))
    return f"{kind} first at stage {stage}, {where}{kernel}{torch_part}{closer} ({runs} runs)"


def closer_clause(c: dict | None) -> str:
    """Why a script's comparison with eager fails on a value that passes the fp64 rule, or ""."""
    if not c:
        return ""
    dtype = c.get("dtype") or "this dtype"
    if sem := c.get("semantics"):
        return (
            f"; a semantics difference, not a tolerance: eager rounds the Python scalar {sem.get('scalar')!r}"
            f" to {sem.get('dtype')} ({sem.get('rounded')!r}) at {sem.get('op')}, the compiled graph keeps it"
            f" ({c.get('what')}: eager equals that rounding at {sem.get('eager_matches_rounded', 0):.0%} of"
            f" elements, compiled the fp64 value at {sem.get('compiled_matches_fp64', 0):.0%})"
        )
    at = f" at {c['op']}" if c.get("op") else " at this op"
    errs = f"max error {c.get('max_abs_err', 0):.3g} vs eager's {c.get('eager_abs_err', 0):.3g}"
    if c.get("closer_to_fp64"):
        how = f"the compiled value is closer to fp64 than eager's ({c.get('what')}, {dtype}: {errs})"
    else:
        how = (
            f"the compiled value differs from eager's by {c.get('vs_eager', 0):.3g} and is within "
            f"{dtype}'s tolerance of the fp64 reference ({c.get('what')}: {errs})"
        )
    return f"; {how}: the script's tolerance is tighter than {dtype} allows{at}"


def next_command(r: dict, script: str, args: list[str]) -> str | None:
    """The suggested follow-up: minify the culprit stage's failure."""
    stage = r.get("first_failing_stage")
    if not stage or r.get("outcome") not in ("fails", "needs_several_graphs"):
        return None
    failure = r.get("failure") or {}
    # an exception from the script's own code (its assert_close on the compiled output): what the
    # graph did wrong can only show in its outputs, which minify's accuracy check compares
    check = "accuracy" if failure.get("kind") == "accuracy" or failure.get("outside_graphs") else "crash"
    if (failure.get("vs_eager") or "").startswith("eager raises"):
        # eager raises on these inputs: minify keeps them, and the raise (or abort) is the signature
        check = "raise"
    elif failure.get("eager_diff"):
        # no graph is farther from fp64 than eager: what fails is the script's comparison with eager
        check = "eager-diff"
    # fxlens's options before SCRIPT: everything after it belongs to the script (rule: tool options before SCRIPT)
    parts = ["fxlens", "minify", "--backend", stage, "--check", check, script, *args]
    kernel = (r.get("kernel") or {}).get("name")
    if kernel and check in ("accuracy", "crash"):  # one kernel named: its launch, as a script
        parts = ["fxlens", "minify", "--kernel", "--kernel-name", kernel, "--backend", stage, script, *args]
    return " ".join(shlex.quote(p) for p in parts)


# where a run's time went (`fxlens.bisect.runs.Outcome.times`), in the order it was spent
SPLIT = (
    ("startup_s", "start"),
    ("import_s", "import"),
    ("compile_s", "compile"),
    ("check_s", "checks"),
    ("run_s", "run"),
)


def _all_run_times(r: dict) -> list[dict]:
    return list(r.get("run_times") or []) + list((r.get("compiler_bisector") or {}).get("run_times") or [])


def _split_text(t: dict) -> str:
    """`start 0.1s, import 9.4s, compile 10.1s, checks 0.3s, run 5.9s` (older verdicts: without
    start, import and run, with `script and start`)."""
    if "run_s" not in t:
        rest = t.get("script_and_start_s", 0)
        return f"compile {t.get('compile_s', 0):.1f}s, checks {t.get('check_s', 0):.1f}s, script and start {rest:.1f}s"
    return ", ".join(f"{name} {t[k]:.1f}s" for k, name in SPLIT if t.get(k) is not None)


def _time_split(r: dict) -> str:
    """`: start 0.3s, import 9.4s, compile 52.0s, checks 1.1s, run 19.5s (run 1 as-asked: 65.8s)`
    over every run (start and import only over the runs that said when they started)."""
    times = _all_run_times(r)
    if not times:
        return ""
    keys = [k for k, _ in SPLIT] + ["script_and_start_s"]
    total = {k: sum(t.get(k) or 0 for t in times) for k in keys}
    if not all("run_s" in t for t in times):  # an older verdict's runs: compile, checks, the rest
        total.pop("run_s")
    first = times[0]
    return f": {_split_text(total)} (run {first['n']} {first['label']}: {first['seconds']:.1f}s)"


def _run_lines(r: dict) -> list[str]:
    """One line per run: where its time went."""
    lines = [
        f"    run {t['n']:>2} {t['label'][:40]:<40} {t['seconds']:6.1f}s: {_split_text(t)}"
        for t in _all_run_times(r)
    ]
    cb = r.get("compiler_bisector") or {}
    if cb.get("driver_start_s") is not None:
        lines.append(
            f"    CompilerBisector driver: start and imports {cb['driver_start_s']:.1f}s (once, before its steps)"
        )
    return lines


def render_text(r: dict) -> str:
    """The short verdict `fxlens bisect` prints."""
    lines = [f"verdict: {r['summary']}"]
    lines += _stage_lines(r)
    lines += _failure_lines(r)
    lines += _location_lines(r)
    lines += _torch_bisector_lines(r.get("compiler_bisector"))
    lines.append(f"  runs     {r.get('runs')} in {r.get('seconds', 0):.1f}s{_time_split(r)}")
    lines += _run_lines(r)
    if r.get("outcome") == "flaky":
        lines.append("  re-run `fxlens bisect` a few times, or fix the randomness (seeds, fallback_random)")
    if r.get("next"):
        lines.append(f"next: {r['next']}")
    lines.append(f"session: {r.get('session')}")
    return "\n".join(lines)


def _stage_lines(r: dict) -> list[str]:
    """The `stages` line: each stage tried, ok or FAILS, and why a stage whose graph raised is ok."""
    lines = []
    stages = " -> ".join(
        f"{s['stage']} {'ok' if s['ok'] else 'FAILS'}"
        for s in r.get("stages") or []
        if s["stage"] != "no_compile"
    )
    if stages:
        lines.append(f"  stages   {stages}")
    as_eager = [s for s in r.get("stages") or [] if s["ok"] and "what eager raises" in (s.get("note") or "")]
    if as_eager:  # why a stage whose graph raised is ok
        lines.append(f"           ({', '.join(s['stage'] for s in as_eager)}: {as_eager[0]['note']})")
    return lines


def _failure_lines(r: dict) -> list[str]:
    """The `kept` and `failure` lines: the reference calls left alone, what failed and how."""
    lines = []
    if r.get("references"):
        lines.append(f"  kept     the script's reference calls: {', '.join(r['references'])} (not stepped)")
    if r.get("failure"):
        where = (
            "  (raised by the script, outside the compiled graphs)"
            if r["failure"].get("outside_graphs")
            else ""
        )
        lines.append(f"  failure  {r['failure']['kind']}: {r['failure']['error']}{where}")
        vs = r["failure"].get("vs_eager")
        if vs and vs != r["failure"]["error"]:
            lines.append(f"  vs eager {vs}")
    return lines


def site_line(site: dict) -> str:
    """`site     pointless_cumsum_replacement  torch/_inductor/fx_passes/post_grad.py:988 ...`"""
    inner = f" (raised in {site['raised_in']})" if site.get("raised_in") else ""
    return f"site     {site['function']}  {site['file']}:{site['line']}{inner}"


def _location_lines(r: dict) -> list[str]:
    """The `graph`, `kernel` and `fusion` lines: where in the compiled code the failure is."""
    lines = []
    if site := (r.get("failure") or {}).get("site"):
        lines.append(f"  {site_line(site)}")
    c = r.get("culprit") or {}
    g = r.get("graph") or {}
    if c.get("compile_id"):
        span = f"graphs #{g['ordinal']}-#{g['to']}" if "to" in g else f"graph #{g.get('ordinal')}"
        lines.append(
            f"  graph    {c['compile_id']}  {c.get('function')}  {short_path(c.get('file') or '?')}:{c.get('line')}  "
            f"({span} of {g.get('of')} compiled{'; from ' + g['from'] if g.get('from') else ''})"
        )
    k = r.get("kernel") or {}
    if k.get("name"):
        err = f"  max abs err {k['max_abs_err']:.3g}" if k.get("max_abs_err") is not None else ""
        lines.append(f"  kernel   {k['name']}  ops {', '.join(k.get('ops') or [])}{err}")
        if k.get("source_path"):
            lines.append(f"           source {k['source_path']}")
    f = r.get("fusion") or {}
    if f.get("decision"):
        lines.append(
            f"  fusion   decision {f['decision']} of {f.get('of')}: {f.get('detail') or ''}".rstrip()
        )
    return lines


def _torch_bisector_lines(cb: dict | None) -> list[str]:
    """The `torch` line: what torch's CompilerBisector narrowed the failure to, or why it could not."""
    if not cb:
        return []
    if cb.get("error"):
        return [f"  torch    CompilerBisector: {cb['error']}"]
    if cb.get("backend"):
        sub = cb.get("subsystem") or "(no subsystem narrowed)"
        num = f" #{cb['bisect_number']}" if cb.get("bisect_number") is not None else ""
        dbg = f": {cb['debug_info']}" if cb.get("debug_info") and cb.get("debug_info") != sub else ""
        skipped = f"; skipped {', '.join(cb['skipped'])}: no CUDA" if cb.get("skipped") else ""
        lines = [
            f"  torch    CompilerBisector: {cb['backend']} / {sub}{num}{dbg} ({cb.get('runs')} runs{skipped})"
        ]
    elif cb.get("budget_spent"):
        lines = [
            f"  torch    CompilerBisector: stopped at its {cb.get('budget_s') or 0:.0f}s budget after"
            f" {cb.get('runs')} runs ({cb['budget_spent']}); --compiler-bisector-budget SECONDS for more"
        ]
    else:
        lines = []
    if other := cb.get("other_failures"):
        first = other[0]
        lines.append(
            f"  torch    {len(other)} step(s) failed otherwise than the script, counted as not failing"
            f" (run {first.get('run')}: {first.get('error')})"
        )
    return lines
