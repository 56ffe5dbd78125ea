"""Text from a trace, a session or a script, made safe for Textual markup.

Rich's `markup.escape` only escapes what looks like a Rich tag; Textual's markup parser also reads
`[2J` or `[31m` (what is left of a terminal escape once shown as text) as the start of a tag, so a
hostile function name could break or restyle a pane. Every `[` is escaped here, after control
characters are shown escaped (`\\x1b`), so nothing from the data is ever interpreted.
"""

from __future__ import annotations

from fxlens.trace.sanitize import for_terminal


def escape(text: object) -> str:
    """`text` as literal Textual markup: control characters shown escaped, every `[` escaped."""
    return for_terminal(text).replace("[", "\\[")
