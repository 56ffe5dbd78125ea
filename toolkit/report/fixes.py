"""Every fix fxlens can try, as one table: fix kind -> how it is applied, what it answers.

A finding (a recompile cause, a graph break, a limit hit, a compiled object never called) carries
its fixes as data: `{"kind": KIND, "params": {...}}` (an *action*), never as prose that `fxlens fix`
would have to parse. KIND is a key of FIXES:

- `config`: a torch config switch (dynamo's, inductor's or functorch's), set in the re-run's
  process before the script runs.
- `hook`: applied by fxlens in the re-run, one applier per kind (fxlens.fix.appliers): mostly
  through its torch.compile hook (fxlens.capture.compile_hook), where the script's own
  torch.compile call is changed (options, what is compiled) or its compiled object wrapped
  (mark_dynamic of an argument before each call).
- `code`: a change to the user's file that fxlens cannot make at run time; stated as a unified diff
  at the line fxlens knows, marked "not tried".

Pure Python: the table is read by the report (no torch) and by the re-run's child (with torch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class FixKind:
    """One row of FIXES."""

    how: str  # config | hook | code
    target: str  # what it should improve: recompiles, breaks, compile_s, graphs (0 -> some)
    text: str  # the fix in words, formatted with the action's params
    # doctor's timing (--speed) wraps what the script gets: not for fixes that hand the script
    # another object than torch.compile's (a module compiled in place, inside DDP, by regions)
    speed: bool = True
    # the params that make two actions one fix (None: all but `target`); regional: the block alone,
    # whichever compile site holds it
    same: tuple | None = None
    # the short name of progress lines, formatted with the params (empty: the kind and its params)
    short: str = ""
    answers: str = ""  # the finding it answers, in words (the docs table of fix kinds)


# kind -> (how, what it should improve, the fix in words); {name}/{value}/... are the action's params
FIXES: dict[str, FixKind] = {
    # a torch config switch for the whole run (capture_scalar_outputs, recompile_limit, doctor's
    # memory causes' activation_memory_budget and freezing): NAME is torch._dynamo.config's, or
    # `inductor.NAME` / `functorch.NAME` for those configs
    "config": FixKind(
        "config",
        "{target}",
        "`{config_name} = {value!r}`",
        short="config {name}={value!r}",
        answers="a `.item()` break (`capture_scalar_outputs`), a data-dependent shape, a changing float or "
        "int attribute, a frame at the recompile limit (`recompile_limit`), doctor's memory causes "
        "(`functorch.activation_memory_budget`, `inductor.freezing`)",
    ),
    # mark one argument of the compiled function dynamic in `dim` before each call
    "mark_dynamic": FixKind(
        "hook",
        "recompiles",
        "`torch._dynamo.mark_dynamic({arg}, {dim})` before each call of {which}",
        answers="a size change of a tensor you pass in",
    ),
    # several arguments that change size together (node features and edge index): each marked
    "mark_dynamic_together": FixKind(
        "hook", "recompiles", "`torch._dynamo.mark_dynamic` of each of {marks} before each call of {which}"
    ),
    # the same for a dim that takes the size 1 (prefill -> decode): only unbacked sizes cover 0 and 1
    "mark_unbacked": FixKind(
        "hook",
        "recompiles",
        "`torch._dynamo.decorators.mark_unbacked({arg}, {dim})` before each call of {which}",
        answers="a dim that becomes 1 (prefill to decode, a batch of one)",
    ),
    # the mark torch suggests when it refuses mark_dynamic (ConstraintViolationError: the model
    # specialises the dim): dynamic where it can be, static where the code needs it
    "maybe_mark_dynamic": FixKind(
        "hook",
        "recompiles",
        "`torch._dynamo.maybe_mark_dynamic({arg}, {dim})` before each call of {which}",
        answers="tried after `mark_dynamic` when torch refuses it (ConstraintViolationError)",
    ),
    # torch.compile(..., dynamic=True) for the compiled objects whose code is `function` (all when unnamed)
    "dynamic": FixKind(
        "hook",
        "recompiles",
        "`torch.compile(..., dynamic=True)` for {which}",
        answers="a size change inside the compiled code, or a changing int",
    ),
    # the reverse: drop a needless dynamic=True (torch's default, dynamic=None: static until a size
    # changes) for the compiled objects whose code is `function`, compiled at `site`
    "dynamic_default": FixKind(
        "hook",
        "compile_s",
        "drop `dynamic=True` at {site} (torch.compile's default, `dynamic=None`) for {which}",
        answers="doctor's `dynamic_unneeded`",
    ),
    # compile the module's own call in place (`model.compile()`): calls that bypass the
    # OptimizedModule wrapper (HF `generate()` calls `self(...)` on the original module) compile
    "compile_in_place": FixKind(
        "hook",
        "graphs",
        "`model.compile()` instead of `model = torch.compile(model)` (compiled at {site}): the script "
        "calls the module through its own methods (`generate()`), which never reach the wrapper",
        speed=False,
        answers="a compiled module never called (HF `generate()`)",
    ),
    # the methods the script calls instead of forward (a VAE's encode/decode), each compiled
    "compile_methods": FixKind(
        "hook",
        "graphs",
        "compile the methods the script calls ({method_list}) instead of the module (compiled at "
        "{site}): its forward never runs",
        speed=False,
        answers="a module called only through its methods (a VAE's `encode`/`decode`)",
    ),
    # a keyword every call of a torch.nn class passes (a caller-side switch that removes a break
    # inside the library, e.g. nn.Transformer's `tgt_is_causal=True` for a causal mask)
    "call_kwarg": FixKind(
        "hook",
        "breaks",
        "pass `{kwarg}={value!r}` to your `nn.{module_class}` (or `nn.Transformer`) call when the mask is "
        "causal: torch then trusts it instead of comparing it with a causal mask (the break)",
        answers="the causal-mask break inside `torch/nn/modules/transformer.py`",
    ),
    # torch.compile(DDP(model)) -> DDP(torch.compile(model)): compile the wrapped module, keep the wrapper
    "compile_inside_ddp": FixKind(
        "hook",
        "breaks",
        "compile the module before DDP wraps it (`DDP(torch.compile(model))`, compiled at {site})",
        speed=False,
        answers="a compiled DDP wrapper",
    ),
    # regional compilation: each instance of a repeated block compiled, not the whole model
    "regional": FixKind(
        "hook",
        "compile_s",
        "compile each `{block}` (`for b in model.modules(): if isinstance(b, {block}): b.compile()`) "
        "instead of the whole model (compiled at {site}): one compile serves every instance",
        speed=False,
        same=("block",),
        answers="compile time of a model made of repeated blocks",
    ),
    # the repeated block marked a nested compile region: the model is still compiled whole, and
    # Dynamo traces the block once and calls that subgraph for every instance (invoke_subgraph)
    "nested_region": FixKind(
        "hook",
        "compile_s",
        "mark `{block}.forward` with `torch.compiler.nested_compile_region` (the model stays compiled "
        "whole at {site}): one traced subgraph serves every instance",
        same=("block",),
        answers="compile time of a model made of repeated blocks, compiled whole",
    ),
    # a function Dynamo should not trace (pure-Python work that makes no op): wrapped in
    # torch.compiler.disable wherever the script's modules and classes hold it, before the first
    # compile; Dynamo then runs it eagerly, with a graph break at each call
    "disable": FixKind(
        "hook",
        "compile_s",
        "wrap `{function}` ({where}) in `torch.compiler.disable`: Dynamo skips it and runs it eagerly "
        "(a graph break where it is called)",
        short="disable {function}",
        answers="a function whose tracing holds much of Dynamo's seconds and makes no op",
    ),
    # a tensor learning rate: a float LR changed by a scheduler is a guarded constant of the step
    "tensor_lr": FixKind(
        "code",
        "recompiles",
        "pass the learning rate as a tensor (`lr=torch.tensor({lr})`): the scheduler then updates a "
        "tensor in place and the compiled step never recompiles",
        answers="a compiled `optimizer.step()` with an LR scheduler",
    ),
    # the last short batch of a DataLoader
    "drop_last": FixKind(
        "code",
        "recompiles",
        "`drop_last=True` on the DataLoader: the short last batch is never seen",
        answers="the short last batch of a DataLoader",
    ),
    # a Python number read from a tensor in the compiled code
    "keep_tensor": FixKind(
        "code",
        "breaks",
        "keep `{expr}` a tensor (no `.item()`), or move the read out of the compiled function",
        answers="a `.item()` graph break",
    ),
    # not compiling at all: compiling costs more than it saves (doctor's slower_than_eager,
    # compile_not_amortised); stated, never tried: the verdict rests on doctor's timing, not on a re-run
    "no_compile": FixKind(
        "code",
        "compile_s",
        "drop the torch.compile call at {site} (call the function itself)",
        answers="doctor's `slower_than_eager`, `compile_not_amortised`",
    ),
    # nn.Transformer / nn.TransformerDecoder / nn.TransformerEncoder given a causal mask without
    # saying so: torch's `_detect_is_causal_mask` reads the mask (`.all()` -> a Tensor.item() break);
    # the caller's switch tells torch the mask is causal and the check is skipped (checked on 2.13:
    # nn.Transformer seq2seq, breaks 1 -> 0, graphs 0 -> 1)
    "causal_mask": FixKind(
        "code",
        "breaks",
        "pass `tgt_is_causal=True` (nn.Transformer, nn.TransformerDecoder) or `is_causal=True` "
        "(nn.TransformerEncoder) beside the causal mask: torch then skips `_detect_is_causal_mask`, "
        "whose read of the mask breaks the graph",
        answers="the causal-mask break, stated at your call",
    ),
    # any other change to the user's code, in the finding's own words (a print moved out of the
    # compiled function, a branch made branchless, a model setting): stated, not tried
    "change_code": FixKind(
        "code",
        "",
        "{text}",
        answers="a `print` or `graph_break()` in the compiled code, a capture-only backend",
    ),
}


def action(kind: str, **params) -> dict:
    """One fix as data: `{"kind": KIND, "params": {...}}` (KIND a key of FIXES)."""
    assert kind in FIXES, kind
    return {"kind": kind, "params": params}


def config_action(name: str, value, target: str) -> dict:
    """A torch._dynamo.config switch that should improve `target` (recompiles, breaks, ...)."""
    return action("config", name=name, value=value, target=target)


def _from_torch_config(act: dict) -> dict:
    """`torch_config` (doctor's sessions before the one `config` kind): `{module, name}` as one NAME."""
    params = dict(act.get("params") or {})
    where = str(params.pop("module", "")).removeprefix("torch._").removesuffix(".config")
    params["name"] = f"{where}.{params.get('name')}" if where else params.get("name")
    return {**act, "kind": "config", "params": params}


# a kind older sessions wrote -> the action as the kind written now (read, never written)
OLD_KINDS = {"torch_config": _from_torch_config}


def current(act: dict) -> dict:
    """ACT in the kind fxlens writes now: a session's actions are read through this."""
    upgrade = OLD_KINDS.get(act.get("kind"))
    return upgrade(act) if upgrade else act


# (pattern on torch's graph-break reason and explanation, the fixes) - first match wins; read by
# `fxlens fix` for the report's breaks and by doctor for its break findings (one table for both)
BREAK_ACTIONS: list[tuple[re.Pattern, list[dict]]] = [
    # a library break with a caller-side switch (matched on the library frame, `break_text`): before
    # the generic rows, whose switch does nothing there (capture_scalar_outputs: checked on 2.13)
    (re.compile(r"_detect_is_causal_mask"), [action("causal_mask")]),
    # Tensor.item() / a Python number read from a tensor: trace it as an unbacked symbol
    (
        re.compile(r"\.item\(\)|Tensor\.item|capture_scalar_outputs|scalar output", re.I),
        [config_action("capture_scalar_outputs", True, "breaks"), action("keep_tensor")],
    ),
    # nn.RNN / nn.GRU / nn.LSTM: Dynamo gives up on the module's frame (no graph at all) unless its
    # experimental RNN support is on (torch's own hint; checked on 2.13: nn.LSTM, breaks 1 -> 0)
    (re.compile(r"wrap RNN, GRU, or LSTM|allow_rnn"), [config_action("allow_rnn", True, "breaks")]),
    # nonzero / unique / masked_select: an output shape that depends on the data
    (
        re.compile(
            r"dynamic.shape operator|capture_dynamic_output_shape_ops|data.dependent output shape", re.I
        ),
        [config_action("capture_dynamic_output_shape_ops", True, "breaks")],
    ),
]


# (library file, function that breaks, the fixes): a break inside a library that a keyword of the
# caller removes. nn.TransformerDecoder compares a `tgt_mask` with a causal mask (`.all()` read as a
# Python bool: a break) unless the caller says it is causal; nn.Transformer passes its own
# `tgt_is_causal` on, so the decoder's keyword serves both
LIBRARY_BREAK_ACTIONS: list[tuple[str, str, list[dict]]] = [
    (
        "torch/nn/modules/transformer.py",
        "_detect_is_causal_mask",
        [action("call_kwarg", module_class="TransformerDecoder", kwarg="tgt_is_causal", value=True)],
    ),
]


def library_break_actions(library: dict | None) -> list[dict]:
    """The caller-side fixes of a break inside a library frame (`{file, function}`), if any."""
    if not library:
        return []
    file = str(library.get("file") or "").replace("\\", "/")
    return next(
        (acts for f, fn, acts in LIBRARY_BREAK_ACTIONS if file.endswith(f) and library.get("function") == fn),
        [],
    )


def break_text(b: dict) -> str:
    """What BREAK_ACTIONS patterns read of one report break: torch's reason and explanation, and the
    library frame that broke (its file, function and line of code), when it is a library's."""
    lib = b.get("library") or {}
    parts = [b.get("reason"), b.get("explanation"), lib.get("file"), lib.get("function"), lib.get("code")]
    return " ".join(p for p in parts if p)


def break_actions_of(b: dict) -> list[dict]:
    """The actions of the first BREAK_ACTIONS row that reads this break ([] when none does)."""
    text = break_text(b)
    return next((list(acts) for pattern, acts in BREAK_ACTIONS if pattern.search(text)), [])


def how(act: dict) -> str:
    act = current(act)
    return FIXES[act["kind"]].how


def target(act: dict) -> list[str]:
    """The measures the fix should improve (a config switch names its own; merged fixes add up)."""
    act = current(act)
    t = FIXES[act["kind"]].target
    t = t.format(**act["params"]) if "{" in t else t
    return [x for x in t.split(",") if x]


def describe(act: dict) -> str:
    """The fix in words (the same words the report prints)."""
    act = current(act)
    params = dict(act.get("params") or {})
    params.setdefault(
        "which",
        f"`{params['function']}`"
        if params.get("function")
        else f"`{params['owner']}`"
        if params.get("owner")
        else "every compiled function",
    )
    params.setdefault("site", "?")
    params.setdefault("expr", "the value")
    params["method_list"] = ", ".join(f"`{m}`" for m in params.get("methods") or []) or "?"
    params["config_name"] = config_name(params["name"]) if "name" in params else ""
    return FIXES[act["kind"]].text.format(**params)


def config_name(name: str) -> str:
    """`torch._dynamo.config.NAME` for NAME; `inductor.X` / `functorch.X` name those configs."""
    where, _, attr = name.rpartition(".")
    return f"torch._{where or 'dynamo'}.config.{attr}"


_DERIVED = ("target", "code_files", "owner")


def key(act: dict) -> tuple:
    """Two actions with the same key are the same fix (one re-run for both findings)."""
    act = current(act)
    params = act.get("params") or {}
    same = FIXES[act["kind"]].same
    # code_files and owner are what fix learns of the code an action names, not another fix
    keep = [k for k in params if k not in _DERIVED and (same is None or k in same)]
    return (act["kind"], tuple(sorted((k, repr(params[k])) for k in keep)))


def label(act: dict) -> str:
    """A short name for progress lines: `config capture_scalar_outputs=True`, `mark_dynamic x 1`."""
    act = current(act)
    p = {
        k: v
        for k, v in (act.get("params") or {}).items()
        if k not in ("target", "file", "site", "site_key", "code_files", "owner", "args", "dims")
    }
    short = FIXES[act["kind"]].short
    return short.format(**p) if short else " ".join([act["kind"], *(str(v) for v in p.values())])


# ---- the fixes as text ----------------------------------------------------------------------------

_MEASURES = (
    ("graphs", "graphs"),
    ("breaks", "breaks"),
    ("recompiles", "recompiles"),
    ("compile_s", "compile s"),
    ("peak_memory", "peak MiB"),
)


def change(before: dict | None, after: dict | None, arrow: str = "->") -> str:
    """`graphs 4 -> 1, breaks 2 -> 0, recompiles 2 -> 0, compile s 3.88 -> 0.84` (before alone
    when there is no after)."""
    if not before:
        return "-"
    parts = []
    for k, label in _MEASURES:
        b = before.get(k)
        a = (after or {}).get(k) if after else None
        fmt = (
            (lambda v: f"{v:.2f}")
            if k == "compile_s"
            else (lambda v: f"{v:.0f}")
            if k == "peak_memory"
            else str
        )
        if b is None:
            continue
        parts.append(f"{label} {fmt(b)}" + (f" {arrow} {fmt(a)}" if a is not None else ""))
    return ", ".join(parts)


def _equal(r: dict) -> str:
    eq = r.get("outputs_equal")
    return "-" if eq is None else ("yes" if eq else "NO")


def fix_lines(result: dict, speed=None) -> list[str]:
    """The fixes as text lines (`fxlens fix`, and the report of a session that holds fix results);
    `speed(fix) -> str` formats the --speed figures (None: not shown)."""
    fixes = result.get("fixes") or []
    if not fixes:
        return ["No finding of this run has a fix fxlens can try or state as code."]
    out = []
    for i, r in enumerate(fixes, 1):
        out.append(f"{i}. [{r['verdict']}] {r['fix']}  ({r['how']})")
        out.append(f"   finding: {r['finding']}")
        if r["verdict"] != "not tried":
            out.append(f"   {change(r.get('before'), r.get('after'))}; outputs equal: {_equal(r)}")
            if r.get("why"):
                out.append(f"   why: {r['why']}")
            if r.get("speed") and speed is not None:
                out.append(f"   speedup over eager (steady state): {speed(r)}")
        elif r.get("patch"):
            out += ["   patch (not tried):", *("     " + ln for ln in r["patch"].rstrip("\n").split("\n"))]
    t = result.get("together")
    if t:
        out.append(
            f"together ({', '.join(t['fixes'])}): [{t['verdict']}] {change(t['before'], t['after'])}; "
            f"outputs equal: {_equal(t)}"
        )
    return out
