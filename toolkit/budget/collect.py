"""In-process capture of torch's structured trace: what `fxlens.expect` and the pytest plugin count.

torch logs every graph, graph break, recompile and fxlens kernel to one logger,
`torch._logging._internal.trace_log`, and only builds a record when that logger has a handler. We
add one handler while any capture is active and hand each record to every active `Capture`
(nested captures, a test-wide budget around a block budget, see the same records). Nothing runs in a
subprocess and nothing is parsed while the user's code runs: a capture keeps torch's LogRecords and
formats them only when asked (`write_log`), in the TORCH_TRACE format, so the existing reader
(`fxlens.trace`) and report (`fxlens.report`) read them exactly as they read a `fxlens run`
session.

Two exceptions to "what torch logs", while our handler is the logger's only one (no TORCH_TRACE):
torch's Chromium timing events (`chromium_event`: about half of all records, the Perfetto view
tlparse draws, skipped by fxlens's reader) and the guard tree printed per compile
(`dynamo_cpp_guards_str`: a budget never reads it; failed guards come with `recompile_reasons`) are
not built at all. Building them is most of what a trace handler costs an eager-backend compile
(about 10% of its CPU time with them; see BENCHMARKS.md for what is left). With TORCH_TRACE set
(another handler is there), nothing is skipped.

torch is imported only when a capture starts, never at import time (`import fxlens.budget.collect`
stays cheap for the pytest plugin, which is loaded in every pytest run where fxlens is installed).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

from fxlens.trace.compileclock import stamp
from fxlens.trace.session import TRACE_DIR, write_info

# The name of the log a capture writes, in the pattern torch's own TORCH_TRACE logs follow.
LOG_NAME = "dedicated_log_torch_trace_fxlens_budget.log"

# Record kinds fxlens's reader skips (see fxlens.trace.reader): left out of a log written only to be read.
UNREAD = frozenset(
    {"chromium_event", "describe_tensor", "describe_storage", "describe_source", "create_symbol", "link"}
)

# Records torch does not even build while only a capture listens (see the module docstring); only
# those torch logs through `torch._logging.trace_structured` looked up at call time can be skipped.
SKIPPED = frozenset({"chromium_event", "dynamo_cpp_guards_str"})

_lock = threading.Lock()
_active: list[Capture] = []
_handler: _Dispatch | None = None


class _Dispatch(logging.Handler):
    """The one handler on torch's trace logger: hands each record to the active captures."""

    def emit(self, record: logging.LogRecord) -> None:
        stamp(record)  # a compile's start and end: both clocks, for compile_s budgets
        # a list copy: a capture may stop from another thread while we iterate
        for cap in list(_active):
            cap.records.append(record)


def _trace_logger() -> logging.Logger:
    from fxlens.backend.torch_compat import trace_log

    return trace_log


def _skipping(original):
    """`trace_structured`, except that the SKIPPED records are not built while only we listen."""
    logger = _trace_logger()

    def trace_structured(name, *args, **kwargs):
        if name in SKIPPED and len(logger.handlers) == 1 and logger.handlers[0] is _handler:
            return None
        return original(name, *args, **kwargs)

    trace_structured._fxlens_original = original
    return trace_structured


def _patch_trace_structured(on: bool) -> None:
    # torch's timing code calls `torch._logging.trace_structured` by attribute, at call time
    from fxlens.backend.torch_compat import current_trace_structured, swap_trace_structured

    current = current_trace_structured()
    if on and not hasattr(current, "_fxlens_original"):
        swap_trace_structured(_skipping(current))
    elif not on and hasattr(current, "_fxlens_original"):
        swap_trace_structured(current._fxlens_original)


def _attach(cap: Capture) -> None:
    global _handler
    with _lock:
        if _handler is None:
            _handler = _Dispatch(level=logging.DEBUG)
            logger = _trace_logger()
            # torch sets the level when it configures logging (import of torch); keep it DEBUG
            # even if the user reconfigured torch logging since
            if logger.level > logging.DEBUG or logger.level == logging.NOTSET:
                logger.setLevel(logging.DEBUG)
            logger.addHandler(_handler)
            _patch_trace_structured(True)
        _active.append(cap)


def _detach(cap: Capture) -> None:
    global _handler
    with _lock:
        logger = _trace_logger()
        if _handler is not None and (_handler not in logger.handlers or logger.disabled):
            # logging was set up again meanwhile (`logging.config.dictConfig` disables existing
            # loggers, torch's among them; or someone removed our handler): every capture running
            # since may have missed records
            for c in (*_active, cap):
                c.lost = True
            if len(_active) > 1:
                logger.addHandler(_handler)
        if cap in _active:
            _active.remove(cap)
        if not _active and _handler is not None:
            logger.removeHandler(_handler)
            _patch_trace_structured(False)
            _handler = None


class Capture:
    """torch's structured-trace records logged between `start()` and `stop()`, in this process.

    Example:
        >>> cap = Capture().start()
        >>> compiled(x)
        >>> cap.stop().write_log(Path("trace"))
    """

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []
        self.active = False
        # set when logging was reconfigured during the capture, silencing our handler:
        # the records are then incomplete and no budget can be judged on them
        self.lost = False

    def start(self) -> Capture:
        """Start receiving records (imports torch's logging, once)."""
        if not self.active:
            self.active = True
            _attach(self)
        return self

    def stop(self) -> Capture:
        """Stop receiving records; what was captured stays."""
        if self.active:
            self.active = False
            _detach(self)
        return self

    def __len__(self) -> int:
        return len(self.records)

    def write_log(self, folder: Path, complete: bool = True) -> Path:
        """Write the records as one TORCH_TRACE log in `folder` (created); returns the log's path.

        torch interns file names once per process (`{"str": [path, n]}`), so a compile inside this
        capture may name a file interned long before it started: every interned name is written
        first, so the stacks of this log resolve on their own. `complete=False` leaves out the
        records fxlens's reader never reads (timings for Perfetto, tensor descriptions): a log only
        for the report, quicker to write and read.
        """
        from fxlens.backend.torch_compat import INTERN_TABLE, TorchLogsFormatter

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOG_NAME
        fmt = TorchLogsFormatter(trace=True)
        pid = os.getpid()
        with open(path, "w", encoding="utf-8") as f:
            for name, idx in list(INTERN_TABLE.items()):
                meta = _json({"str": [name, idx]})
                f.write(f"V0101 00:00:00.000000 {pid} fxlens/budget/collect.py:0] {meta}\n")
            for rec in list(self.records):
                kind = next(iter(getattr(rec, "metadata", None) or {"?": 0}))
                if kind == "str" or (not complete and kind in UNREAD):
                    continue  # names: already written above, from the full table
                try:
                    line = fmt.format(rec)
                except Exception:  # noqa: BLE001 - one odd record must not lose the others
                    continue
                if line:
                    f.write(line + "\n")
        return path


def _json(obj) -> str:
    import json

    return json.dumps(obj, default=repr)


def write_session(cap: Capture, folder: Path, info: dict) -> Path:
    """Write `cap` as an fxlens session (session.json + trace/) that `fxlens report`/`tui` open."""
    folder.mkdir(parents=True, exist_ok=True)
    cap.write_log(folder / TRACE_DIR)
    write_info(folder, {"kind": "compile_budget", **info})
    return folder


def scratch_dir() -> Path:
    """A fresh private temp folder for a capture's log while it is being read."""
    return Path(tempfile.mkdtemp(prefix="fxlens_budget_"))
