"""Write the backend's artifacts into torch's structured trace (TORCH_TRACE), like inductor does.

The backend needs nothing from the toolkit: a TORCH_TRACE from any job that compiled with
`backend="fxlens"` carries these artifacts, and `fxlens report` reads them back.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from typing import Any

from fxlens.backend.torch_compat import TRACE_STRUCTURED_TAKES_COMPILE_ID, trace_structured

# Every artifact the backend writes is named with this prefix so readers can pick them out.
PREFIX = "fxlens_"

# The compile id of artifacts written outside Dynamo's compile (dynamic shapes specialise at run
# time, where torch has no current compile id): set by `for_compile`, passed to trace_structured.
_COMPILE_ID: contextvars.ContextVar = contextvars.ContextVar("fxlens_compile_id", default=None)


@contextlib.contextmanager
def for_compile(compile_id) -> Iterator[None]:
    """Attribute artifacts logged inside the block to `compile_id` (a torch._guards.CompileId)."""
    token = _COMPILE_ID.set(compile_id)
    try:
        yield
    finally:
        _COMPILE_ID.reset(token)


def _id_kwargs() -> dict:
    cid = _COMPILE_ID.get()
    return {"compile_id": cid} if cid is not None and TRACE_STRUCTURED_TAKES_COMPILE_ID else {}


def log_artifact(name: str, payload: str | Callable[[], str]) -> None:
    """Append a string artifact `fxlens_<name>` to the structured trace (no-op when tracing is off)."""
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": PREFIX + name, "encoding": "string"},
        payload_fn=payload if callable(payload) else (lambda: payload),
        **_id_kwargs(),
    )


def log_json(name: str, obj: Any | Callable[[], Any]) -> None:
    """Append a JSON artifact `fxlens_<name>` to the structured trace (no-op when tracing is off)."""
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": PREFIX + name, "encoding": "json"},
        payload_fn=lambda: json.dumps(obj() if callable(obj) else obj),
        **_id_kwargs(),
    )
