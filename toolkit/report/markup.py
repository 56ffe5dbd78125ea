"""Escaping and path shortening for the Markdown and HTML outputs, and the environment block.

Every string that comes from a trace (function names, reasons, source lines, guards) is data a
script author or a torch message chose, so it can hold `<script>`, `|`, backticks or terminal
escapes. Everything written into Markdown or HTML goes through one of the functions here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# C0 controls (but tab and newline), DEL and C1 controls: shown as visible `\x1b`, never emitted raw
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# punctuation that means something to GitHub-flavoured Markdown anywhere in running text (`(` only
# after `]`, escaped already; `&` so that an entity in a trace string stays as written)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~<>&])")
# ... and what means something only at the start of a line (heading, list, quote, ordered list)
_MD_LINE_START = re.compile(r"^(\s*)([#+\-]+(?=\s|$)|=+\s*$|>|\d+[.)](?=\s|$))")


def visible(text: object) -> str:
    """`str(text)` with control characters (ANSI escapes included) spelled out as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


def md_text(text: object) -> str:
    """Text safe in a Markdown paragraph or table cell: punctuation backslash-escaped, one line.

    `<` and `>` are backslash-escaped too, so GitHub never sees an HTML tag; `|` is escaped so a
    table cell never splits.
    """
    one_line = " ".join(visible(text).split("\n"))
    escaped = _MD_SPECIAL.sub(r"\\\1", one_line)
    return _MD_LINE_START.sub(_escape_line_start, escaped)


def _escape_line_start(m: re.Match) -> str:
    # `1. x` becomes `1\. x` (the dot is the marker), `# x` becomes `\# x`, `--- ` becomes `\---`
    lead, mark = m.group(1), m.group(2)
    if mark[0].isdigit():
        return f"{lead}{mark[:-1]}\\{mark[-1]}"
    return f"{lead}\\{mark}"


def md_code(text: object) -> str:
    """An inline code span that holds `text` verbatim, also inside a table cell.

    The fence is one backtick longer than the longest backtick run inside; a pipe is written `\\|`
    (GFM strips the backslash inside a table, and a pipe would end the cell otherwise).
    """
    body = " ".join(visible(text).split("\n")).replace("|", "\\|")
    if not body:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def md_fence(text: object, lang: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in `text`."""
    body = visible(text).rstrip("\n")
    longest = max((len(r) for r in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def md_details(summary: str, body: str) -> str:
    """A collapsible section; `summary` is escaped as HTML (it sits inside `<summary>`)."""
    return f"<details><summary>{h(summary)}</summary>\n\n{body}\n\n</details>"


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    """A GFM table; cells must already be escaped (md_text / md_code)."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def h(text: object) -> str:
    """Text escaped for HTML (quotes too), control characters spelled out."""
    import html  # its entity table costs the text report's start, which never escapes HTML

    return html.escape(visible(text), quote=True)


class PathShortener:
    """Paths relative to the script's folder, `~` for the home folder, never an absolute home path."""

    def __init__(self, script: str | None = None) -> None:
        self.root = str(Path(script).resolve().parent) if script else None
        self.home = os.path.expanduser("~")

    def path(self, path: object) -> str:
        """One file path as the reader should see it."""
        p = "" if path is None else str(path)
        if not p or p.startswith("<"):
            return p
        if self.root and (p == self.root or p.startswith(self.root.rstrip("/") + "/")):
            return os.path.relpath(p, self.root)
        if self.home not in ("", "/") and (p == self.home or p.startswith(self.home + "/")):
            return "~" + p[len(self.home) :]
        return p

    def text(self, text: object) -> str:
        """Free text (a guard, an explanation) with the script folder and home folder shortened."""
        t = "" if text is None else str(text)
        if self.root and self.root != "/":
            t = t.replace(self.root.rstrip("/") + "/", "")
        if self.home not in ("", "/"):
            t = t.replace(self.home + "/", "~/")
        return t


def _version(dist: str) -> str | None:
    import importlib.metadata  # scans installed distributions (email, zipfile): only for environment()

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _device() -> str:
    """The accelerator this machine has, as torch sees it (imports torch: only for reports)."""
    try:
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            return f"{torch.cuda.get_device_name(0)} (x{n}, CUDA {torch.version.cuda})"
        return "cpu (no CUDA device visible)"
    except Exception as e:  # noqa: BLE001 - a report must not fail on a broken driver
        return f"unknown ({type(e).__name__})"


def traced_torch_version(logs: list) -> dict:
    """The `torch_version` artifact torch writes at the top of each log (the version that RAN)."""
    import json

    for log in logs:
        try:
            with open(log, encoding="utf-8", errors="replace") as f:
                lines = []
                for i, line in enumerate(f):
                    if i > 400:
                        break
                    if lines:
                        if not line.startswith("\t"):
                            return json.loads("".join(ln[1:] for ln in lines))
                        lines.append(line)
                    elif '"name": "torch_version"' in line:
                        lines.append("\t")
        except (OSError, ValueError):
            continue
    return {}


def run_environment() -> dict:
    """The environment of the process that ran the script (the runner records it as an event).

    Never initialises CUDA: a device is named only when the script used it.
    """
    import platform

    import torch

    try:
        if torch.cuda.is_initialized():
            name = torch.cuda.get_device_name(torch.cuda.current_device())
            stack = f"HIP {torch.version.hip}" if torch.version.hip else f"CUDA {torch.version.cuda}"
            device = f"{name} ({stack}, {torch.cuda.device_count()} visible)"
        elif torch.cuda.is_available():
            device = f"cpu tensors only (CUDA available, {torch.cuda.device_count()} device(s), not used)"
        else:
            device = "cpu (no CUDA device visible)"
    except Exception as e:  # noqa: BLE001 - a broken driver must not fail the user's run
        device = f"unknown ({type(e).__name__})"
    return {
        "torch": torch.__version__,
        "triton": _version("triton") or _version("pytorch-triton"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": device,
        "fxlens": _version("fxlens"),
    }


def environment(logs: list | None = None, events: list | None = None, probe_device: bool = True) -> dict:
    """torch, triton, python, platform, device: what a bug report needs to be reproduced.

    From the run when it was recorded (`fxlens run` writes an `environment` event; torch's version
    and commit also come from the trace's `torch_version` record); else from the machine rendering
    the report, and `source` says which.
    """
    import platform  # these imports cost the text report's start; only Markdown/HTML ask

    traced = traced_torch_version(logs or [])
    run = next((e for e in events or [] if e.get("event") == "environment"), None)
    base = (
        run
        if run is not None
        else {
            "torch": _version("torch"),
            "triton": _version("triton") or _version("pytorch-triton"),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "device": _device() if probe_device else None,
            "fxlens": _version("fxlens"),
        }
    )
    env = {k: base.get(k) for k in ("torch", "triton", "python", "platform", "device", "fxlens")}
    env["torch"] = traced.get("pytorch_version") or env["torch"]
    env["torch_commit"] = traced.get("commit")
    env["torch_from"] = "trace" if traced.get("pytorch_version") else ("run" if run else "this machine")
    env["source"] = "run" if run is not None else "this machine"
    return env


def environment_lines(env: dict) -> list[tuple[str, str]]:
    """(name, value) rows for the environment block."""
    torch_v = f"{env.get('torch')}" + (f" ({env['torch_commit'][:12]})" if env.get("torch_commit") else "")
    if env.get("torch_from") == "trace":
        torch_v += ", from the trace"
    rows = [
        ("torch", torch_v),
        ("triton", env.get("triton") or "not installed"),
        ("python", env.get("python") or "?"),
        ("platform", env.get("platform") or "?"),
        ("device", env.get("device") or "not probed"),
        ("fxlens", env.get("fxlens") or "?"),
    ]
    # say which rows describe the run and which the machine that wrote the report
    if env.get("source") != "run":
        note = (
            "torch is the traced run's; the other rows are the machine that wrote this report"
            if env.get("torch_from") == "trace"
            else "these rows are the machine that wrote this report, not necessarily the run's"
        )
        rows.append(("note", note))
    return rows


def command_line(tool: str, info: dict, ps: PathShortener | None = None) -> str:
    """The whole command a run was started with, to paste into a shell: the environment switches it
    ran under (`FXLENS_INJECT=...`, torch's), `fxlens TOOL`, its options, then the script (or
    `-m MODULE`) and every argument of the script's own.

    INFO holds what the session recorded (session.json, or the `invocation` of a bisect / minify
    result): `script`, `module`, `argv`, `env`, and the options `backend`, `check`, `nproc`.
    """
    import shlex

    ps = ps or PathShortener(info.get("script"))
    words = [f"{k}={v}" for k, v in (info.get("env") or {}).items()]
    words += ["fxlens", tool]
    if info.get("backend"):
        words += ["--backend", str(info["backend"])]
    if info.get("check") and tool in ("bisect", "minify"):
        words += ["--check", str(info["check"])]
    if info.get("nproc") and tool in ("run", "doctor"):
        words += ["--nproc", str(info["nproc"])]
    words += ["-m", str(info["module"])] if info.get("module") else [ps.path(info.get("script") or "SCRIPT")]
    words += [str(a) for a in info.get("argv") or []]
    return " ".join(shlex.quote(w) for w in words)
