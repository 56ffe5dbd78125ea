"""What to change for one recompile cause: the words (CAUSES) and the fixes as data (actions).

One row per failed-guard kind in CAUSES (its subject and fix text); `cause_fix` picks the fix for
the tensor or value it is: a KV cache, an argument the user passes to the compiled call (they hold
it: `mark_dynamic`), a tensor inside the compiled code (they do not: `dynamic=True`), a dim that
became 1 (torch always specialises it: `mark_unbacked`), a scheduler's learning rate (a tensor LR),
a setting the user sets on a library model. Each fix also comes as actions (fxlens.report.fixes)
that `fxlens fix` tries. Pure Python.
"""

from __future__ import annotations

import re

from fxlens.report.fixes import action, config_action
from fxlens.trace.guards import FailedGuard, describe_source, source_name, tensor_hint
from fxlens.trace.userfiles import is_library_code
from fxlens.trace.userframes import short_path

# What each kind of failed guard means and what to change, one row per kind (the patterns that
# read torch's text are fxlens.trace.guards.RULES). {name}: the user's name for the guarded source
# ("input_ids", "the first positional argument"); {t}: a variable to write in code; {dim}; {text}:
# torch's guard. Fixes are right for training code: none detaches a tensor or drops gradients.
CAUSES: dict[str, tuple[str, str]] = {
    "size": (
        "input {name}, dim {dim}",
        "one recompile on a new size is expected: torch then compiles that dim as dynamic (automatic "
        "dynamic shapes); if sizes keep changing, ",
    ),
    "size_one": (
        "size 1 of {name}, dim {dim}",
        "torch compiles a dynamic dim for sizes >= 2 and always specialises size 1 (a batch or "
        "sequence of one, prefill then one-token decode steps): expected once, and neither automatic "
        "dynamic shapes nor `mark_dynamic` can cover it; for one graph for every size, mark it "
        "unbacked before the call: `torch._dynamo.decorators.mark_unbacked({t}, {dim})`",
    ),
    "size_branch": (
        "a branch on the size of {name}, dim {dim}",
        "the code compares this size (`{code}`): each side of the branch compiles once, expected when "
        "sizes cross the threshold; move the branch out of the compiled function if it flips often",
    ),
    "shape_relation": (
        "a relation between sizes of {name}",
        "an earlier compile assumed `{text}`; inputs whose sizes keep that relation reuse one graph",
    ),
    "stride": (
        "stride of {name}, dim {dim}",
        "make the input contiguous (`{t}.contiguous()`) before the call",
    ),
    "ndim": ("rank of {name}", "call with one rank of tensor, or compile one function per rank"),
    "dtype": (
        "dtype of {name}",
        "cast {name} to one dtype before the call (e.g. `{t}.float()`), or expect one compile per dtype",
    ),
    "requires_grad": (
        "requires_grad of {name}",
        "one compile per requires_grad setting is expected (e.g. a frozen then unfrozen layer, or an "
        "input that needs gradients in training only); do not `.detach()` a tensor that needs "
        "gradients to avoid it: gradients would silently stop",
    ),
    "device": ("device of {name}", "keep {name} on one device for every call"),
    "dispatch_keys": (
        "grad mode, autocast or requires_grad of {name}",
        "one compile per mode is expected (training vs `torch.no_grad()`, autocast on vs off)",
    ),
    "grad_mode": (
        "grad mode (training vs `torch.no_grad()`)",
        "the function ran with and without gradients (a training step and a `torch.no_grad()` "
        "validation): one compile each is expected; nothing to change unless it keeps recompiling",
    ),
    "autocast": (
        "autocast state",
        "called inside and outside `torch.autocast`: one compile per state is expected; keep the call "
        "always inside (or always outside) autocast",
    ),
    "default_dtype": (
        "the default dtype",
        "`torch.set_default_dtype` changed between calls: set it once at start-up",
    ),
    "deterministic": (
        "deterministic-algorithms mode",
        "`torch.use_deterministic_algorithms` changed between calls: set it once at start-up",
    ),
    "num_threads": (
        "the number of CPU threads",
        "`torch.set_num_threads` changed between calls (a library or DataLoader worker set-up can do "
        "this): set it once before the first compiled call",
    ),
    "matmul_precision": (
        "matmul precision flags (TF32 / reduced precision)",
        "set `torch.backends` precision flags once at start-up, not between calls",
    ),
    "torch_function_mode": (
        "the torch function mode stack",
        "a TorchFunctionMode or `torch.device(...)` context differs between calls: keep it the same",
    ),
    "global_state": (
        "global torch state ({text})",
        "keep grad mode, autocast and torch's global flags fixed around the call",
    ),
    "training": (
        "train/eval mode of {name}",
        "train/eval switches compile once per mode (expected, two compiles); to avoid it, compile a "
        'separate eval copy or run eval under `torch.compiler.set_stance("eager_on_recompile")`',
    ),
    "global": (
        "global {name}",
        "the global {name} is guarded: pass it as an argument, or make it a constant; every change recompiles",
    ),
    "item_value": (
        "a Python number read from a tensor",
        "a Python number from `.item()`/`float()` was specialised: keep it a tensor, or set "
        "`torch._dynamo.config.capture_scalar_outputs = True`",
    ),
    # ___stackN == v where the graph broke on a call that reads no tensor (os.getpid(), time.time())
    "stack_value": (
        "a value returned by a call that broke the graph (`{code}`)",
        "`{code}` breaks the graph and its result is a constant of the resumed graph: each new "
        "value recompiles; compute it outside the compiled function and pass it in (as a tensor if it "
        "keeps changing)",
    ),
    # torch's "Cache line invalidated because X got deallocated": a note, never blamed beside a guard
    "cache_note": (
        "a compile dropped by torch ({text})",
        "torch dropped a cached compile because an object it was keyed on ({name}) was freed: keep that "
        "object (a module, a function) alive and reuse it across calls",
    ),
    "module_attr": (
        "module attribute {name}",
        "integer attributes of an nn.Module are static (torch's HINT): every value compiles anew; "
        "register it as a buffer (`self.register_buffer(...)`, a tensor the graph reads) or set "
        "`torch._dynamo.config.allow_unspec_int_on_nn_module = True`",
    ),
    "value": (
        "Python value {name}",
        "the Python value {name} is specialised: pass it as a tensor, or mark it dynamic "
        "(`torch.compile(..., dynamic=True)`) if it keeps changing",
    ),
    "length": ("length of {name}", "{name} changed length: pad it to a fixed length, or pass a tensor"),
    # not ___dict_contains('step_count', self.__dict__): the instance's own attribute now hides the
    # class attribute the first compile read
    "instance_attr": (
        "instance attribute {name}, over its class attribute",
        "{name} was set on the instance after the first compiled call, hiding the class attribute of "
        "that name that the first compile read: set it on the instance before the first call (in "
        "`__init__`), or keep it on the class only; one compile per way is expected",
    ),
    "default_device": (
        "the default device",
        "`torch.set_default_device` (or a `with torch.device(...)` block) differs between calls: set it "
        "once before the first compiled call",
    ),
    "saved_tensors_hooks": (
        "saved-tensors hooks",
        "a saved-tensors hook (`torch.autograd.graph.saved_tensors_hooks`: activation checkpointing or "
        "offloading) is on for some calls and off for others: one compile per state is expected; keep "
        "it the same around every call",
    ),
    "dict_version": (
        "contents of {name}",
        "a dict the compiled code reads was changed in place between calls: fill it before the first "
        "call and keep it, or pass what the code needs as arguments",
    ),
    "hooks": (
        "hooks of {name}",
        "a module hook was registered or removed between calls: register hooks before the first "
        "compiled call and keep them",
    ),
    "dict_key": (
        "key {name}",
        "the key {name} came or went between calls: pass a dict with the same keys on every call "
        "(a missing optional entry as a fixed default); each set of keys compiles once",
    ),
    "hasattr": (
        "attribute {name}",
        "the attribute {name} came or went between calls (the code checks `hasattr`): set it before the "
        "first compiled call, and keep it",
    ),
    "dict_keys": (
        "the keys of {name}",
        "{name} had other keys (or another order): pass the same keys in the same order on every call",
    ),
    "aliasing": (
        "aliasing of {name} with another input",
        "two inputs were one tensor in one call and two in another (torch compiles each aliasing "
        "once): pass distinct tensors (`.clone()` one) or the same one on every call",
    ),
    "none": ("{name} being None", "pass {name} on every call or on none: each case compiles once"),
    "identity": (
        "identity of {name}",
        "a different object {name} was passed: reuse one object (module, function) across calls",
    ),
    "type": ("type of {name}", "{name} changed type between calls: pass one type"),
    "other": ("guard `{text}`", "torch's guard `{text}` failed; `TORCH_LOGS=recompiles` shows every check"),
}


def shorten(text: str, limit: int) -> str:
    """TEXT cut to about LIMIT characters, never inside one of torch's quotes (a cut quote reads as
    a different guard): the cut backs off to before the open quote, and says it with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for q in ("'", '"'):
        if cut.count(q) % 2:  # quotes nest in torch's text (`'L['x']'`): back off to before the first
            cut = cut[: cut.index(q)]
    cut = cut.rstrip(" ,.:;(")
    return (cut + " …") if cut else text


def format_for_guard(template: str, g: FailedGuard) -> str:
    name = describe_source(g.source) if g.source else "the input"
    t = tensor_hint(g.source) or "x"
    out = template.format(
        name=name, t=t, dim=g.dim or 0, text=shorten(g.text, 160), code=shorten(g.code, 80) or g.text
    )
    if t == "t" and "{t}" in template:  # a wrapper's *args: the record has no variable name
        out += " (`t`: the tensor your code passes in that position)"
    return out


RESUME_PREFIX = "torch_dynamo_resume_in_"
# a learning rate in an optimizer's param_groups, as torch names the guard's source
_LR = re.compile(r"param_groups\b.*\['lr'\]")
# a setting the user sets on a library model: its config (`self.config.problem_type`), or a keyword
# argument of the call (`use_cache`, `return_dict`, `loss_type`)
_SETTING = re.compile(r"(^|\.)config\.|^kwargs\[|^(use_cache|return_dict|loss_type|output_\w+)$")


def _frame_of(g: dict) -> dict:
    """The compiled frame an action applies to: its code name and file."""
    rc = g["rc"]
    if rc.co_name and rc.co_name.startswith(RESUME_PREFIX):
        return {"function": rc.function, "file": rc.file}  # resumed after a break: the function itself
    if rc.co_name and rc.co_name != rc.function.rsplit(".", 1)[-1]:
        # torch's own wrapper of a module call (`inner`, placed at the user's call): the action
        # applies to whichever compiled object the call goes through
        return {}
    return {"function": rc.co_name or rc.function, "file": rc.file}


def cause_fix(
    kind: str, fix_t: str, guard: FailedGuard, g: dict, held: bool, hit_limit: bool
) -> tuple[str, list]:
    """The fix for one cause, in words and as actions (fxlens.report.fixes) `fxlens fix` can try."""
    name = source_name(guard.source) if guard.source else ""
    values = g["values"]
    if kind in ("module_attr", "value") and _LR.search(guard.source or ""):
        lr = values[0] if values else "0.01"
        return (
            "the learning rate is a Python float in the optimizer's param_groups, and the LR scheduler "
            "changes it at every step: pass it as a tensor (`torch.optim.AdamW(params, "
            f"lr=torch.tensor({lr}))`, torch's documented way to compile `optimizer.step()` with a "
            "scheduler); the scheduler then updates the tensor in place and the step compiles once",
            [action("tensor_lr", lr=lr)],
        )
    if kind == "size":
        return _size_fix(guard, format_for_guard(fix_t, guard), g, held)
    if kind == "size_one":
        fix = (
            format_for_guard(fix_t, guard)
            if held
            else (
                "torch compiled that dim for sizes >= 2 and specialises size 1 (prefill then one-token "
                "decode steps, a batch of one): one compile per size-1 case is expected, and neither "
                "automatic dynamic shapes nor `mark_dynamic` can cover a size of 1"
            )
        )
        acts = [action("mark_unbacked", arg=name, dim=int(guard.dim or 0), **_frame_of(g))] if held else []
        return fix, acts
    fix = format_for_guard(fix_t, guard)
    if kind == "stride" and not held:  # the model's own tensor: there is no input to make contiguous
        fix = (
            f"{describe_source(guard.source) if guard.source else 'the tensor'} is computed inside the "
            "compiled code, not passed by your script: its layout follows the code before it (a "
            "transpose, a memory format, a slice taken on one path only); one compile per layout is "
            "expected, and one layout on every path (`.contiguous()` where the code makes it) compiles once"
        )
    if kind == "other" and guard.hint:  # no rule of ours: torch's own HINT is the best fix there is
        fix = f"torch's hint: {guard.hint}"
    actions = _actions(kind, g)
    if kind in _CODE_KINDS and guard.file and is_library_code(guard.file):
        fix = _library_code_fix(name, guard)
    return fix, actions


def _actions(kind: str, g: dict) -> list:
    """The actions of a cause that is a Python value (a number read from a tensor, an argument, a
    module attribute)."""
    values = g["values"]
    if kind == "item_value":
        return [config_action("capture_scalar_outputs", True, "recompiles")]
    if kind not in ("module_attr", "value") or not values:
        return []
    number = _number(values[0])
    if isinstance(number, float) and kind == "value":
        # a float argument: `dynamic=True` traces it as a symbol (one graph for every value);
        # specialize_float=False is torch 2.13's default already and changes nothing (checked)
        return [action("dynamic", **_frame_of(g))]
    if isinstance(number, float):
        return [config_action("specialize_float", False, "recompiles")]
    if isinstance(number, int) and kind == "module_attr":
        return [config_action("allow_unspec_int_on_nn_module", True, "recompiles")]
    if isinstance(number, int):
        return [action("dynamic", **_frame_of(g))]
    return []


def _library_code_fix(name: str, guard: FailedGuard) -> str:
    """A guard in a library's code: a setting the script passes, or nothing the script controls."""
    if _SETTING.search(name):
        return (
            f"`{name}` is a setting your script passes or sets (a model config field, a keyword "
            "argument such as `use_cache` or `loss_type`), and the library's code branches on it at "
            f"{short_path(guard.file)}:{guard.line}: give it one value for every call (set it once, "
            "before the first compiled call); each value compiles once"
        )
    return (
        f"the guard is in {guard.file}:{guard.line}, a library's code your script does not control: "
        "one compile per distinct way the library calls that frame is expected; only if the frame "
        "hits the recompile limit, raise `torch._dynamo.config.recompile_limit`"
    )


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


# kinds that guard what a frame's own code did with its arguments (their count, type, identity, a
# Python value): when that code is a library's, the fix cannot be to change it
_CODE_KINDS = {"length", "type", "identity", "value", "none", "module_attr", "other"}

# a tensor of a KV cache, as torch names its source (`kwargs['past_key_values'].layers[0].keys`,
# `...key_cache[0]`): it grows by one token per decoding step
_KV_CACHE = re.compile(r"past_key_value|cache|\.(keys|values)\b", re.I)


def _size_fix(guard: FailedGuard, automatic: str, g: dict, held: bool) -> tuple[str, list]:
    """What to do about a size change, for the tensor it is: a KV cache (generation), an argument of
    the compiled call (a batch dim: a DataLoader's short last batch; a sequence length), or a
    tensor inside the compiled code the user never holds."""
    values = g["values"]
    third = len(values) > 2
    if guard.source and _KV_CACHE.search(guard.source):
        sizes = [int(v) for v in values if v.isdigit()]
        if len(sizes) > 1 and all(b == a + 1 for a, b in zip(sizes, sizes[1:])):
            what = "the KV cache grows by one token at every decoding step"
        else:
            what = (
                f"the cache's length changed ({' -> '.join(values)}): a new prompt length (an encoder-"
                "decoder's cross-attention cache holds the encoder's length, fixed for one prompt)"
            )
        return (
            what
            + ": "
            + ("" if third else "one recompile is expected, then torch compiles that dim as dynamic; ")
            + "to compile one graph for every length, give generation a static cache (HF: "
            '`model.generate(..., cache_implementation="static")`) or pad prompts to a few fixed lengths',
            [action("dynamic")],
        )
    if not held:
        who = describe_source(guard.source) if guard.source else "the tensor"
        return (
            ("the dim stayed static: " if third else automatic)
            + f"{who} is not an argument your script passes to the compiled call (torch compiled an "
            "inner frame, e.g. after a graph break): compile with `dynamic=True`, or mark the tensor "
            "you pass dynamic before the call",
            [action("dynamic")],
        )
    act, todo = _mark_fix(guard, g)
    sizes = [int(v) for v in values if v.isdigit()]
    short_last = str(guard.dim or 0) == "0" and len(sizes) > 1 and sizes[-1] < sizes[0]
    if short_last:  # a smaller batch after the usual one: a DataLoader's last batch
        todo += (
            ", pad to a few fixed lengths, or for the last short batch of a DataLoader pass `drop_last=True`"
        )
        act.append(action("drop_last"))
    else:
        todo += " or pad to a few fixed lengths"
    if third:  # a third size: the dim stayed static
        return "the dim stayed static (`dynamic=False`, `mark_static`, or a guard specialised it): " + (
            format_for_guard(todo, guard)
        ), act
    return automatic + format_for_guard(todo, guard), act


def _mark_fix(guard: FailedGuard, g: dict) -> tuple[list, str]:
    """(actions, words) that make a dim of a tensor the user passes dynamic."""
    name = source_name(guard.source)
    if _library_model(guard, g):
        # a library model ties its inputs' dims together (input_ids and attention_mask have one
        # length): `mark_dynamic` of one alone raises ConstraintViolationError there, and
        # `maybe_mark_dynamic` does not raise but leaves the recompile (both checked on BERT); where
        # nothing ties them (torch.nn.Sequential called with one tensor) the mark is what works, and
        # dynamic=True does nothing: both are actions, and `fxlens fix` measures which
        mark = action("mark_dynamic", arg=name, dim=int(guard.dim or 0), **_frame_of(g))
        return [action("dynamic", **_frame_of(g)), mark], (
            "compile with `dynamic=True`, or mark that dim dynamic on every input of that length "
            "before the first call (`torch._dynamo.mark_dynamic({t}, {dim})`, and the same for an "
            "attention_mask beside it): `mark_dynamic` of one alone raises ConstraintViolationError "
            "where the model ties the dims, and `maybe_mark_dynamic` leaves the recompile"
        )
    act = [action("mark_dynamic", arg=name, dim=int(guard.dim or 0), **_frame_of(g))]
    return act, "mark it dynamic before the first call (`torch._dynamo.mark_dynamic({t}, {dim})`)"


def _library_model(guard: FailedGuard, g: dict) -> bool:
    """Whether the compiled frame is a library model's, entered from the user's call: its name is the
    library's class and method (`BertModel.forward`), or its arguments came through a wrapper's
    `**kwargs` (transformers' `wrapper(*args, **kwargs)`)."""
    return "." in g["rc"].function or (guard.source or "").startswith(("kwargs[", "L['kwargs']"))
