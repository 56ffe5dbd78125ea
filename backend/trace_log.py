"""Write the backend's artifacts into torch's structured trace (TORCH_TRACE), like inductor does.

The backend needs nothing from the toolkit: a TORCH_TRACE from any job that compiled with
`backend="fxlens"` carries these artifacts, and `fxlens report` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from torch._logging import trace_structured

# Every artifact the backend writes is named with this prefix so readers can pick them out.
PREFIX = "fxlens_"


def log_artifact(name: str, payload: str | Callable[[], str]) -> None:
    """Append a string artifact `fxlens_<name>` to the structured trace (no-op when tracing is off)."""
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": PREFIX + name, "encoding": "string"},
        payload_fn=payload if callable(payload) else (lambda: payload),
    )


def log_json(name: str, obj: Any | Callable[[], Any]) -> None:
    """Append a JSON artifact `fxlens_<name>` to the structured trace (no-op when tracing is off)."""
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": PREFIX + name, "encoding": "json"},
        payload_fn=lambda: json.dumps(obj() if callable(obj) else obj),
    )
