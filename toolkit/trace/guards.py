"""Torch's failed guards read as data: the source they check, what kind of check, and its values.

A recompile record lists, per earlier compile, the guard that failed, as torch printed it:

    0/0: tensor 'kwargs['input_ids']' size mismatch at index 1. expected 16, actual 24
    0/0: GLOBAL_STATE changed: grad_mode
    0/0: s._modules['drop'].training == True   # return F.dropout(...)  # nn/modules/dropout.py:73 in forward
    User stack trace:
      File "/app/train.py", line 41, in forward

`parse_failed_guard` splits that into the guard expression, torch's comment (the code the guard
came from, its place, torch's HINT) and the user frames, then classifies the expression with the
first matching row of `RULES`. Source names (`L['x']`, `kwargs['input_ids']`, `args[0]`,
`self._modules['drop']`, `G['FLAG']`, `___stack0`) are parsed once here into the name a user wrote.
Pure Python: the toolkit reads traces from any torch release without importing torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxlens.trace.userframes import innermost_user_frame, parse_traceback, source_line

_DTYPES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
}


@dataclass(frozen=True)
class FailedGuard:
    """One failed guard of a recompile, parsed."""

    text: str  # torch's guard expression, without its "0/0: " prefix and comment
    kind: str  # a RULES kind ("size", "grad_mode", ...) or "other"
    source: str = ""  # torch's source name: "kwargs['input_ids']", "L['x']", "s._modules['drop']"
    name: str = ""  # the name in the user's words: "input_ids", "s.drop"
    dim: str = ""
    expected: str = ""
    actual: str = ""
    against: str = ""  # the compile whose guard failed ("0/0")
    code: str = ""  # the line of code torch attributes the guard to
    file: str = ""  # where that code is (the innermost user frame when torch gave a stack)
    line: int = 0
    hint: str = ""  # torch's own HINT text, when it gave one


# ---- source names -------------------------------------------------------------------------------


def _ordinal(i: int) -> str:
    return {0: "first", 1: "second", 2: "third"}.get(i, f"#{i + 1}")


def source_name(source: str) -> str:
    """The name a user wrote for one of torch's guard sources.

    `L['x']` -> `x`; `kwargs['input_ids']` / `L['kwargs']['input_ids']` -> `input_ids`;
    `args[0]` -> `args[0]`; `self._modules['drop'].training` -> `self.drop.training`;
    `G['FLAG']` -> `FLAG`; `x.size()[0]` stays.
    """
    s = source.strip()
    s = re.sub(r"^[LG]\['([^']+)'\]", r"\1", s)  # frame locals and globals
    s = re.sub(r"^kwargs\['([^']+)'\]", r"\1", s)  # a keyword argument is the user's own name
    s = re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", s)
    s = re.sub(r"\.__dict__\['([^']+)'\]", r".\1", s)
    return s


def describe_source(source: str) -> str:
    """`args[0]` -> "the first positional argument"; other names as `name` in backticks."""
    name = source_name(source)
    m = re.fullmatch(r"(?:args|inputs)\[(\d+)\]", name)
    if m:
        return f"`{name}` (the {_ordinal(int(m.group(1)))} positional argument)"
    if re.fullmatch(r"___stack\d+", name):  # not a name of the user's: what the break left behind
        return f"a value the code computed before a graph break (torch's `{name}`)"
    return f"`{name}`"


def tensor_hint(source: str) -> str:
    """How a fix should name the tensor: `x`, or `t` with a note for positional wrapper arguments."""
    name = source_name(source)
    if re.fullmatch(r"(?:args|inputs)\[\d+\]", name):
        return "t"  # the wrapper's *args: the user's variable name is not in the record
    return name


# ---- torch's comment and stack ------------------------------------------------------------------

_PREFIX = re.compile(r"^(?P<against>\d+/\d+(?:_\d+)?): ")
_COMMENT_LOC = re.compile(r"^(?P<file>.+?):(?P<line>\d+) in (?P<fn>\S+)(?: \((?P<extra>.*)\))?$", re.S)


def _split_comment(first: str) -> tuple[str, str, str, int, str]:
    """(guard, code, file, line, extra) from `guard   # code  # file:line in fn (extra)`."""
    # the guard itself may hold " # " only inside quotes, which torch's sources never do
    parts = re.split(r"\s+# ", first, maxsplit=2)
    guard = parts[0].strip()
    code, file, line, extra = "", "", 0, ""
    if len(parts) == 3:
        code = parts[1].strip()
        m = _COMMENT_LOC.match(parts[2].strip())
        if m:
            file, line, extra = m["file"], int(m["line"]), (m["extra"] or "")
    elif len(parts) == 2:
        m = _COMMENT_LOC.match(parts[1].strip())
        if m:
            file, line, extra = m["file"], int(m["line"]), (m["extra"] or "")
        else:
            code = parts[1].strip()
    return guard, code, file, line, extra


# ---- the rules ----------------------------------------------------------------------------------


class _Lazy:
    """A pattern compiled on its first use: the ~50 rules below cost ~15 ms to compile, most of a
    report's import of this module, and a log without failed guards uses none of them."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, *args):
        self._args, self._compiled = args, None

    def __getattr__(self, name):  # match, search, pattern...: only attributes of the compiled one
        if name.startswith("_"):  # its own slots before __init__ (a copy, a pickle): not the pattern's
            raise AttributeError(name)
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


_lazy = _Lazy


@dataclass(frozen=True)
class Rule:
    """One kind of guard: the pattern of its expression, and how its values read."""

    kind: str
    pattern: _Lazy


_SRC = r"(?P<src>.+?)"
# (kind, pattern on the guard expression) - first match wins; groups: src, dim, exp, act
RULES: list[Rule] = [
    # tensor 'kwargs['input_ids']' size mismatch at index 1. expected 16, actual 24
    Rule(
        "size",
        _lazy(
            rf"^tensor '{_SRC}' size mismatch at index (?P<dim>\d+)\. expected (?P<exp>\S+), actual (?P<act>\S+)"
        ),
    ),
    # tensor 'x' stride mismatch at index 0. expected 3, actual 1
    Rule(
        "stride",
        _lazy(
            rf"^tensor '{_SRC}' stride mismatch at index (?P<dim>\d+)\. expected (?P<exp>\S+), actual (?P<act>\S+)"
        ),
    ),
    # tensor 'x' rank mismatch. expected 1, actual 2
    Rule("ndim", _lazy(rf"^tensor '{_SRC}' rank mismatch\. expected (?P<exp>\S+), actual (?P<act>\S+)")),
    # tensor 'x' dtype mismatch. expected Float, actual Double
    Rule(
        "dtype", _lazy(rf"^tensor '{_SRC}' dtype mismatch\. expected (?P<exp>\w+), actual (?P<act>\w+)")
    ),
    # tensor 'x' requires_grad mismatch. expected requires_grad=0
    Rule(
        "requires_grad",
        _lazy(rf"^tensor '{_SRC}' requires_grad mismatch\. expected requires_grad=(?P<exp>\d)"),
    ),
    # tensor 'x' device mismatch. expected cpu, actual cuda:0 (wording varies by release)
    Rule(
        "device",
        _lazy(
            rf"^tensor '{_SRC}' device(?: index)? mismatch(?:\. expected (?P<exp>\S+), actual (?P<act>\S+))?"
        ),
    ),
    # tensor 'x' dispatch key set mismatch (grad mode, autocast or requires_grad, by older releases)
    Rule("dispatch_keys", _lazy(rf"^tensor '{_SRC}' dispatch key set mismatch")),
    # GLOBAL_STATE changed: grad_mode / autocast(cpu)_enabled / default_dtype (2.5+); the fields
    # are read by `global_state_kind`
    Rule("global_state", _lazy(r"^GLOBAL_STATE changed: (?P<exp>.*)$")),
    Rule("global_state", _lazy(r"___check_global_state")),  # releases before the wording
    Rule("torch_function_mode", _lazy(r"___check_torch_function_mode_stack")),
    # 2 <= x.size()[0] (0/1 specialisation) / 6 <= x.size()[0] (the code branched on a size)
    Rule("size_range", _lazy(rf"^(?P<exp>-?\d+) <= {_SRC}\.size\(\)\[(?P<dim>\d+)\]$")),
    Rule("size_range", _lazy(rf"^{_SRC}\.size\(\)\[(?P<dim>\d+)\] <= (?P<exp>-?\d+)$")),
    # any other symbolic-shape guard: Eq(x.size()[0], 2*y.size()[0]), x.size()[0] < 10, ...
    Rule("shape_relation", _lazy(r"(?P<src>[\w\[\]'\.]+)\.size\(\)\[(?P<dim>\d+)\]")),
    # s._modules['drop'].training == True / L['self'].training == True
    Rule("training", _lazy(rf"^{_SRC}\.training == (?P<exp>True|False)$")),
    # torch's note that a cache entry was dropped (an object it was keyed on was freed): not a guard
    Rule("cache_note", _lazy(r"^Cache line invalidated because (?P<src>.+?) got deallocated")),
    # G['USE_BIAS'] == True
    Rule("global", _lazy(r"^G\['(?P<src>[^']+)'\] == (?P<exp>.+)$")),
    # G['cfg'].depth == 3: an attribute of a global, named whole (`cfg.depth`, not `cfg`)
    Rule("global", _lazy(r"^(?P<src>G\['[^']+'\](?:\.\w+|\[[^\]]+\])+) == (?P<exp>.+)$")),
    # ___stack0 == 4.0 (a Python number from .item() / float() specialised)
    Rule("item_value", _lazy(r"^(?P<src>___stack\d+) == (?P<exp>.+)$")),
    # s.k == 3 / L['self'].k == 3: a Python attribute of an nn.Module
    Rule(
        "module_attr",
        _lazy(
            r"^(?P<src>(?:L\['self'\]|self|s|L\['args'\]\[0\]|args\[0\]|L\['fn'\]|fn)(?:\.\w+|\[[^\]]+\])+) == (?P<exp>.+)$"
        ),
    ),
    # torch's own state and helper guards whose text names no value of the user's: read as torch
    # wrote them (the cause shows torch's guard): forward-AD level, functorch's stack, tensor
    # subclass metadata, DTensor specs, opaque objects, fake script objects, sets, iterators
    Rule(
        "other",
        _lazy(
            r"forward_ad\._current_level|compare_functorch_state|___check_metadata_|__dtensor_spec_|"
            r"___check_opaque_guard_fn_|___check_fake_script_type|^(?:not )?set\.__contains__|"
            r"___tuple_iterator_len|___normalize_range_iter|___normalize_count_iter"
        ),
    ),
    # utils_device.CURRENT_DEVICE == None: `torch.set_default_device` / a `with torch.device(...)`
    Rule("default_device", _lazy(r"^utils_device\.CURRENT_DEVICE == (?P<exp>.+)$")),
    # ...top_saved_tensors_hooks ids == None: a saved-tensors hook (checkpointing, offloading)
    Rule("saved_tensors_hooks", _lazy(r"top_saved_tensors_hooks ids == (?P<exp>.+)$")),
    # ___dict_version(G['d']) == 3: a dict the code reads was changed in place
    Rule("dict_version", _lazy(r"^___dict_version\((?P<src>.+?)\) == (?P<exp>\d+)$")),
    # L['x'].raw_repr() == DispatchKeySet(...).raw_repr(): a dispatch key set argument
    Rule("dispatch_keys", _lazy(r"^(?P<src>.+?)\.raw_repr\(\) == ")),
    # len(L['self']._forward_hooks) == 0: a module hook registered (or removed) after the first call
    Rule(
        "hooks", _lazy(r"^len\((?P<src>.+?\._(?:forward|backward)(?:_pre)?_hooks\w*)\) == (?P<exp>\d+)$")
    ),
    # not ___dict_contains('step_count', self.__dict__): an instance attribute set after the first
    # call shadows the class attribute of that name (the reverse form: the instance's was deleted)
    Rule(
        "instance_attr",
        _lazy(r"^(?P<exp>not )?___dict_contains\('(?P<key>[^']+)', (?P<src>.+?)\.__dict__\)$"),
    ),
    # ___dict_contains('k', L['d']) / not ...: a key of a dict came or went
    Rule("dict_key", _lazy(r"^(?P<exp>not )?___dict_contains\('(?P<key>[^']+)', (?P<src>.+?)\)$")),
    # hasattr(L['x'], 'a') / not hasattr(...): an attribute came or went (not the dynamic-marking ones)
    Rule("hasattr", _lazy(r"^(?P<exp>not )?hasattr\((?P<src>.+?), '(?P<key>[^']+)'\)$")),
    # list(dict.keys(L['d'])) == ['a', 'b'] / list(L['d'].keys()) == [...]: another set of keys
    Rule(
        "dict_keys",
        _lazy(r"^list\((?:dict\.keys\((?P<src>.+?)\)|(?P<src2>.+?)\.keys\(\))\) == (?P<exp>.+)$"),
    ),
    # Duplicate tensors found: L['a'] is L['b'] / L['b'] is L['a']: two inputs aliased in one call only
    Rule("aliasing", _lazy(r"^Duplicate tensors found: (?P<src>.+)$")),
    Rule("aliasing", _lazy(r"^(?P<src>L\[[^\]]+\]\S*) is (?P<exp>L\[[^\]]+\]\S*)$")),
    # len(L['x']) == 3 / len(d) != 1
    Rule("length", _lazy(r"^len\((?P<src>.+)\) (?:==|!=) (?P<exp>\d+)$")),
    # not args: a tuple, list or dict that was empty (a wrapper's *args, **kwargs)
    Rule("length", _lazy(rf"^not {_SRC}$")),
    # L['k'] == 0 / k == 2.5 / mode == 'a' / cfg.flag == True
    Rule("value", _lazy(rf"^{_SRC} == (?P<exp>.+)$")),
    # x is None / x is not None
    Rule("none", _lazy(rf"^{_SRC} is (?P<exp>not None|None)$")),
    # ___check_obj_id(fn, 1398...), ID_MATCH: a different object
    Rule("identity", _lazy(r"___check_obj_id\((?P<src>[^,]+),")),
    # ___check_type_id(x, ...), TYPE_MATCH: an object of another type
    Rule("type", _lazy(r"___check_type_id\((?P<src>[^,]+),")),
    # expected type of 'L['past_key_values']' to be a tensor type, ' but found <class 'NoneType'>
    # (a tensor input that became another object: None, a cache object, a list)
    Rule(
        "type",
        _lazy(
            r"^expected type of '(?P<src>.+?)' to be (?P<exp>a tensor type)[, ']*but found (?P<act>.+)$"
        ),
    ),
]

# torch's HINT on a failed guard names the cause better than the guard's shape (a module's int
# attribute reached through a global, `G['m'].k == 2`, reads as a global otherwise): (pattern, kind)
HINT_KINDS = [
    (_lazy(r"integer attributes of the nn\.Module"), "module_attr"),
]

# GLOBAL_STATE fields, torch's names -> kind
_GLOBAL_FIELDS = [
    (_lazy(r"grad_mode"), "grad_mode"),
    (_lazy(r"autocast"), "autocast"),
    (_lazy(r"default_dtype"), "default_dtype"),
    (_lazy(r"deterministic"), "deterministic"),
    (_lazy(r"num_threads"), "num_threads"),
    (_lazy(r"torch_function"), "torch_function_mode"),
    (_lazy(r"allow_tf32|allow_bf16_reduce|allow_fp16_reduce"), "matmul_precision"),
]


def local_expr(text: str) -> str:
    """`L['self']` -> `self` inside a source (the failed-guard lines' own spelling)."""
    return re.sub(r"\bL\['([^']+)'\]", r"\1", text.strip())


def global_state_kind(fields: str) -> str:
    for pattern, kind in _GLOBAL_FIELDS:
        if pattern.search(fields):
            return kind
    return "global_state"


def _values(kind: str, exp: str, act: str) -> tuple[str, str]:
    if kind == "dtype":
        return _DTYPES.get(exp, exp), _DTYPES.get(act, act)
    if kind == "requires_grad":  # torch prints only what the old compile expected
        return ("False", "True") if exp == "0" else ("True", "False")
    if kind == "training":
        return ("train", "eval") if exp == "True" else ("eval", "train")
    return exp, act


def classify_expression(expr: str) -> tuple[str, str, str, str, str]:
    """(kind, source, dim, expected, actual) of one guard expression ("other" when no rule matches)."""
    for rule in RULES:
        m = rule.pattern.search(expr)
        if m:
            g = m.groupdict()
            kind = rule.kind
            exp, act = g.get("exp") or "", g.get("act") or ""
            if g.get("key"):  # a name inside a dict or object: its source is that entry, in words
                present = bool(exp.strip())  # `not ___dict_contains(...)` failed: the key is there now
                g["src"] = (
                    f"{local_expr(g['src'])}.{g['key']}"
                    if kind != "dict_key"
                    else f"{g['src']}[{g['key']!r}]"
                )
                exp, act = ("absent", "present") if present else ("present", "absent")
            g["src"] = g.get("src") or g.get("src2")
            if kind == "aliasing":  # `a is b`: the two inputs that were one tensor (or two)
                a, _, b = (g["src"] + " is " + exp).partition(" is ")
                g["src"], exp = a.strip(), local_expr(b.split(" is ")[0])
            if kind == "global_state" and exp:
                kind = global_state_kind(exp)
                exp = exp.strip()
            exp, act = _values(kind, exp, act)
            return kind, (g.get("src") or "").strip(), g.get("dim") or "", exp, act
    return "other", "", "", "", ""


def parse_failed_guard(reason: str) -> FailedGuard:
    """One failed-guard entry of a recompile record (its first line, comment and user stack)."""
    text = reason.strip("\n")
    head, _, stack = text.partition("\nUser stack trace:")
    first = head.split("\n")[0].strip()
    m = _PREFIX.match(first)
    against = m["against"] if m else ""
    first = first[m.end() :] if m else first
    guard, code, cfile, cline, extra = _split_comment(first)
    kind, src, dim, exp, act = classify_expression(guard)
    if kind == "size_range":
        # torch's 0/1 specialisation says so in its comment; any other bound is the user's branch
        kind = "size_one" if "0/1 specialization" in extra or exp == "2" else "size_branch"
    user = innermost_user_frame(parse_traceback(stack)) if stack else None
    hint = extra[len("HINT:") :].strip() if extra.startswith("HINT:") else ""
    if "0/1 specialization" in extra:
        hint = extra
    kind = next((k for pattern, k in HINT_KINDS if pattern.search(hint)), kind) if hint else kind
    file, line = (user.file, user.line) if user else (cfile, cline)
    code = (user.code if user and user.code else code) if user else code
    if kind == "item_value":
        kind, code = _stack_value(text, file, code)
    return FailedGuard(
        text=guard,
        kind=kind,
        source=src,
        name=source_name(src) if src else "",
        dim=dim,
        expected=exp,
        actual=act,
        against=against,
        code=code,
        file=file,
        line=line,
        hint=hint,
    )


# `___stackN == v` guards a value Dynamo carried across a graph break into the resumed code: the
# result of whatever broke the graph on the line the resume function is named after
_RESUME_AT = re.compile(r"torch_dynamo_resume_in_\w+?_at_(?P<line>\d+)")
# ... read from a tensor when that line does so (`.item()`, `float(t)`); else a call's result
_TENSOR_READ = re.compile(r"\.(?:item|tolist)\(\)|\b(?:float|int|bool|complex)\(")


def _stack_value(text: str, file: str, code: str) -> tuple[str, str]:
    """("item_value", code) when the value was read from a tensor at the break, or the break's line
    cannot be read (torch's own `.item()` case); ("stack_value", the break's line) when that line
    reads no tensor (`os.getpid()`, `time.time()`: a call's result, specialised)."""
    m = _RESUME_AT.search(text)
    broke = source_line(file, int(m["line"])) if m and file else ""
    if not broke or _TENSOR_READ.search(broke):
        return "item_value", code
    return "stack_value", broke
