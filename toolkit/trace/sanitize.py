"""Make text from a trace or a script safe to show: control characters are shown escaped, never sent.

Names, reasons, guards, graph code and exception text come from torch's trace, which may have been
written by someone else's job: a function named "\\x1b]0;pwned\\x07" would retitle the terminal, and
"\\x1b[2J" would clear it. Every text printer shows such characters as `\\x1b` instead (the TUI also
never interprets Rich markup in them; JSON escapes them itself). Newlines and tabs are layout and pass.
"""

from __future__ import annotations

import os
import re
import stat

# C0 controls except \t and \n, DEL, C1 controls, and the bidi / invisible formatting characters a
# "trojan source" uses to make text read differently from what it is
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_UNSAFE_KEEP_CR = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def _escaped(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def for_terminal(s: object, keep_cr: bool = False) -> str:
    """`str(s)` with every control character shown escaped (`\\x1b`); \\n and \\t are kept.

    `keep_cr` also keeps carriage returns (fxlens's own progress bar redraws its line with one).
    """
    s = str(s)
    if s.isprintable():  # no control or format character at all (most text): nothing to escape
        return s
    return (_UNSAFE_KEEP_CR if keep_cr else _UNSAFE).sub(_escaped, s)


def clip(text: str | None, limit: int) -> str:
    """TEXT cut to at most LIMIT characters at a word boundary, with "..." saying it was cut (a hint
    cut mid-word read "removing the `torc"); the whole text stays in the JSON."""
    text = text or ""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 3, 1)]
    if (
        not (head[-1].isspace() or text[len(head)].isspace()) and " " in head.strip()
    ):  # mid-word: drop the partial word
        head = head.rstrip().rsplit(None, 1)[0]
    cut = head  # (one long word: cut inside it; there is no boundary to cut at)
    return cut.rstrip(" ,;:.([{`'\"") + "..."


def clean(obj):
    """A copy of `obj` (dicts, lists, tuples, dataclasses, strings) with every string `for_terminal`ed."""
    if isinstance(obj, str):
        return for_terminal(obj)
    if isinstance(obj, dict):
        return {clean(k) if isinstance(k, str) else k: clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(clean(v) for v in obj)
    if hasattr(type(obj), "__dataclass_fields__") and not isinstance(obj, type):
        import dataclasses  # here: `fxlens --version` and the CLI's start need no dataclasses

        changes = {f.name: clean(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    return obj


class SafeStream:
    """A text stream wrapper that shows control characters escaped: every fxlens print goes through
    one (installed by the CLI), so a printer that forgets to sanitise still cannot reach the terminal."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s: str) -> int:
        return self._stream.write(for_terminal(s, keep_cr=True))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):  # flush, isatty, fileno, encoding, buffer ...
        return getattr(self._stream, name)


# a file named by a trace or a session is read for display only when it is a regular file this small
MAX_DISPLAY_BYTES = 16 << 20


def read_display_text(path: str | os.PathLike) -> str | None:
    """The text of a file a trace or session names (a source file, a reproducer), for display only.

    None unless it is a regular file of at most MAX_DISPLAY_BYTES: a hostile session can name a FIFO
    (reading it would block forever), /dev/zero (never ends) or a huge file.
    """
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_DISPLAY_BYTES:
            return None
        with open(path, "rb") as f:
            return f.read(MAX_DISPLAY_BYTES).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
