"""Code fixes as unified diffs against the user's file, at the line fxlens knows.

A fix that needs an edit of the script (a tensor learning rate, `drop_last=True`, a `.item()` kept
a tensor) is never applied by fxlens: it is written as a patch the user can read and apply, and
marked "not tried". Each patch is made from the file as it is now; none when the construct the fix
edits cannot be found (the fix is then stated in words only).
"""

from __future__ import annotations

import ast
import difflib
import os
import re

# optimizer classes of torch.optim whose `lr` a scheduler changes
_OPTIMIZERS = re.compile(
    r"^(Adam|AdamW|SGD|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|ASGD|Rprop|SparseAdam)$"
)


def _diff(path: str, old: list[str], new: list[str]) -> str:
    rel = os.path.relpath(path)
    if rel.startswith(".."):  # outside the working directory: the absolute path, as `diff -u` writes it
        return "".join(difflib.unified_diff(old, new, path, path))
    return "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))


def _read(path: str) -> tuple[list[str], ast.AST] | None:
    try:
        text = open(path, encoding="utf-8").read()
        return text.splitlines(keepends=True), ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _replace_in_line(lines: list[str], node: ast.AST, old: str, new: str) -> list[str] | None:
    """LINES with the source of NODE (one line) rewritten from OLD to NEW, or None."""
    if node.lineno != node.end_lineno:
        return None
    i = node.lineno - 1
    line = lines[i]
    seg = line.encode()[node.col_offset : node.end_col_offset].decode()
    if seg != old:
        return None
    out = list(lines)
    out[i] = line.replace(old, new, 1)
    return out


def tensor_lr(script: str) -> tuple[str, int, str] | None:
    """(patch, line, lr) making the first torch.optim optimizer's float `lr=` a tensor."""
    got = _read(script)
    if got is None:
        return None
    lines, tree = got
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _OPTIMIZERS.match(_name(node.func)):
            for kw in node.keywords:
                if (
                    kw.arg == "lr"
                    and isinstance(kw.value, ast.Constant)
                    and isinstance(kw.value.value, float)
                ):
                    old = ast.get_source_segment("".join(lines), kw.value)
                    new = _replace_in_line(lines, kw.value, old, f"torch.tensor({old})")
                    if new:
                        return _diff(script, lines, new), node.lineno, old
    return None


def drop_last(script: str, lines_of: list[int] | None = None) -> tuple[str, int] | None:
    """(patch, line) adding `drop_last=True` to the DataLoaders made on LINES_OF (the loaders the
    run saw end with a short batch; None: the first DataLoader without it)."""
    got = _read(script)
    if got is None:
        return None
    lines, tree = got
    if lines_of is not None and not lines_of:
        return None
    calls = sorted(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and _name(n.func) == "DataLoader" and n.end_lineno
        ),
        key=lambda n: n.lineno,
    )
    new, first = list(lines), None
    for node in calls:
        if lines_of is not None and not any(node.lineno <= ln <= node.end_lineno for ln in lines_of):
            continue
        edited = _add_drop_last(new, node)
        if edited is None:
            continue
        new, first = edited, first or node.lineno
        if lines_of is None:
            break
    return (_diff(script, lines, new), first) if first else None


def _add_drop_last(lines: list[str], node: ast.Call) -> list[str] | None:
    """LINES with `drop_last=True` in the DataLoader call NODE (False turned True), or None."""
    kws = {kw.arg: kw for kw in node.keywords}
    if "drop_last" in kws:
        kw = kws["drop_last"]
        if isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return _replace_in_line(lines, kw.value, "False", "True")
        return None
    i = node.end_lineno - 1
    line = lines[i]
    cut = len(line.encode()[: node.end_col_offset].decode()) - 1  # the closing paren
    if line[cut] != ")":
        return None
    sep = "" if line[:cut].rstrip().endswith((",", "(")) else ", "
    new = list(lines)
    new[i] = line[:cut].rstrip() + sep + "drop_last=True" + line[cut:]
    return new


def keep_tensor(path: str, line: int) -> tuple[str, str] | None:
    """(patch, expr) dropping the first `.item()` on LINE of PATH: the value stays a tensor."""
    got = _read(path)
    if got is None or not 0 < line <= len(got[0]):
        return None
    lines, tree = got
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "item"
            and not node.args
            and node.lineno == line
        ):
            old = ast.get_source_segment("".join(lines), node)
            expr = ast.get_source_segment("".join(lines), node.func.value)
            new = _replace_in_line(lines, node, old, expr)
            if new:
                return _diff(path, lines, new), old
    return None
