"""The user's frames and lines: Dynamo's synthetic names mapped back to the user's, tracebacks read,
the innermost user frame, source lines and how a location is shown. Which files are the user's is
`fxlens.trace.userfiles`."""

from __future__ import annotations

import linecache
import os
import re
import stat
import sys
from pathlib import Path

from fxlens.trace.records import Frame
from fxlens.trace.sources import lookup
from fxlens.trace.userfiles import is_user_file, library_path

_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")


def user_function(co_name: str | None) -> str:
    """`torch_dynamo_resume_in_forward_at_16` -> `forward` (also nested resume functions)."""
    name = co_name or "?"
    while m := _RESUME.match(name):
        name = m.group(1)
    return name


def is_resume(co_name: str | None) -> bool:
    return bool(co_name and _RESUME.match(co_name))


_TOOLKIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def called_by_torch(depth: int = 2) -> bool:
    """Whether the caller of the function calling this (`depth` frames up, fxlens's own wrappers
    skipped) is torch itself: torch.compile calls torch._dynamo.optimize, as a user's bug report
    for torch 2.0 does; fxlens's wrappers of both count only the user's calls."""
    frame = sys._getframe(depth)
    # by file, not module name: the runner runs as __main__ (`python -m fxlens.capture.runner`)
    while frame is not None and frame.f_code.co_filename.startswith(_TOOLKIT_DIR):
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name == "torch" or name.startswith("torch.")


# a source file larger than this is not read for one line (a trace can name /dev/zero or a huge log)
_MAX_SOURCE_BYTES = 16 << 20


def source_line(path: str, line: int, fallback: str = "") -> str:
    """The stripped source line, read from the file when it still exists.

    Paths come from the trace, which may be hostile: only a regular file of sane size is read
    (never a FIFO, a device or /dev/zero, which would block or never end), and a path open()
    rejects (a NUL byte) just falls back.
    """
    text = lookup(path, line) if path and line else None  # the line as it was when the run ended
    if text is not None:
        return text.strip() or fallback.strip()
    text = ""
    if path and line:
        try:
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size <= _MAX_SOURCE_BYTES:
                text = linecache.getline(path, line).strip()
        except (OSError, ValueError):
            text = ""
    return text or fallback.strip()


_TB_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\s*$')


def parse_traceback(text: str) -> list[Frame]:
    """Frames of a Python traceback block ("  File ..., line N, in f" + its code line)."""
    frames: list[Frame] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _TB_FRAME.match(line)
        if not m:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _TB_FRAME.match(lines[i + 1]) else ""
        if set(code) <= set("^~ "):
            code = ""
        frames.append(Frame(m["file"], int(m["line"]), m["func"], code))
    return frames


def innermost_user_frame(frames: list[Frame]) -> Frame | None:
    for fr in reversed(frames):
        if is_user_file(fr.file):
            return fr
    return None


# folders a location is shown relative to when it is not under the cwd: the folders of the scripts
# whose sessions were opened, so a session read from another folder still shows `model.py:12`
_ROOTS: list[Path] = []


def show_relative_to(folder: str | os.PathLike) -> None:
    """Show locations under FOLDER relative to it (after the cwd, which comes first)."""
    try:
        p = Path(folder).resolve()
    except (OSError, ValueError):
        return
    if p not in _ROOTS:
        _ROOTS.append(p)


def live_user_frame(frame):
    """The innermost frame of the user's code at or above the live FRAME (a library's helper that
    calls for the user is placed at the user's call); None when there is none."""
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def location(file: str | None, line: int | None) -> str:
    """`file:line` with the file as `short_path` shows it; `?` when the file is not known."""
    return f"{short_path(file)}:{line}" if file else "?"


def short_path(path: str, root: str | None = None) -> str:
    """A path relative to `root` (default: the cwd, else a script's folder, see `show_relative_to`)
    when inside it, else as is."""
    try:
        full = Path(path).resolve()
        roots = [Path(root).resolve()] if root else [Path.cwd().resolve(), *_ROOTS]
    except (ValueError, OSError):
        return path
    for r in roots:
        if full.is_relative_to(r):
            return str(full.relative_to(r))
    return path


def shown_path(path: str) -> str:
    """A file as the report shows it: the user's relative to here, a library's as its package path."""
    return short_path(path) if is_user_file(path) else library_path(path)


def def_params(path: str, line: int) -> set[str]:
    """The parameter names of the function defined at PATH:LINE (its `def` line, or a decorator's
    above it), read from the source as it was when the run ended; empty when it cannot be read."""
    import ast

    sig = ""
    for i in range(line, line + 40):  # decorators, then a signature over several lines
        text = source_line(path, i)
        if not sig and not text.startswith(("def ", "async def ")):
            if text.startswith("@") or not text:
                continue
            return set()
        sig += " " + text
        code = sig.strip().removeprefix("async ")
        try:  # a body on the def line itself, or a bare signature ending in ":"
            tree = ast.parse(code) if not code.endswith(":") else ast.parse(code + "\n    pass")
        except SyntaxError:
            continue
        fn = tree.body[0]
        if not isinstance(fn, ast.FunctionDef):
            return set()
        a = fn.args
        names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        return set(names)
    return set()
