"""Which captured torch config lines the script itself set, for the reproducer's header and body.

The capture records every non-default `torch._dynamo` / `_inductor` / `_functorch` config line at
each graph's compile, less what a plain compile shows anyway (`capture.baseline_config_lines`).
What is left can still be torch's own (a switch Dynamo or inductor patches only for some graphs)
or another tool's. A line is kept only when the script, or a local module it imports, names its
setting (`torch._inductor.config.fallback_random = True`, `config.patch(fallback_random=True)`,
`patch("triton.cudagraphs", False)`): a setting never named there was not set by the script.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

MAX_FILES = 200


_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)


def _sources(script: str) -> str:
    """The text of SCRIPT and the modules it imports from its own folder, transitively (a
    module's `.py` file or package `__init__.py`; unreadable ones skipped)."""
    folder = Path(script).resolve().parent
    seen: set[Path] = set()
    todo, texts = [Path(script).resolve()], []
    while todo and len(seen) < MAX_FILES:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        texts.append(text)
        for m in _IMPORT.finditer(text):
            rel = Path(*(m.group(1) or m.group(2)).split("."))
            todo += [p for p in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py") if p.exists()]
    return "\n".join(texts)


def _setting(line: str) -> str:
    """`torch._inductor.config.triton.cudagraphs = False` -> `cudagraphs`."""
    return line.split(" = ", 1)[0].rsplit(".", 1)[-1]


def not_set_by_script(script: str, cap: Path) -> set[str]:
    """The captured config lines (of every graph in `cap`) whose setting the script never names."""
    lines: set[str] = set()
    for meta in Path(cap).glob("graph_*.json"):
        try:
            lines.update(json.loads(meta.read_text()).get("config") or [])
        except (OSError, ValueError):
            continue
    if not lines:
        return set()
    text = _sources(script)
    if not text:  # the script's source is not readable here (`-m MODULE`): every line is kept
        return set()
    return {ln for ln in lines if not re.search(rf"\b{re.escape(_setting(ln))}\b", text)}
