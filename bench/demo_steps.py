"""Each step of `fxlens demo` timed (its output discarded), as JSON: where a demo's time goes.

    python bench/demo_steps.py                          # this checkout
    PYTHONPATH=BEFORE python bench/demo_steps.py        # another fxlens first on the path

Run it alternately for a before/after comparison on the same machine; record the load beside it.
"""

import contextlib
import io
import json
import time

t0 = time.perf_counter()
from fxlens import demo  # noqa: E402

STEPS = [
    ("run", lambda: demo.step_run("fxlens"), None),
    ("bisect", demo.step_bisect, demo.DEMO_FAULT),
    ("minify", demo.step_minify, demo.DEMO_FAULT),
    ("kernel", demo.step_kernel, demo.DEMO_FAULT),
    ("doctor", demo.step_doctor, None),
]
took: dict = {}
for name, fn, fault in STEPS:
    start = time.perf_counter()
    buf = io.StringIO()
    with demo._injected(fault) if fault else contextlib.nullcontext(), contextlib.redirect_stdout(buf):
        fn()
    took[name] = round(time.perf_counter() - start, 1)
    if name == "doctor":  # its timing line: how many pairs, how long, why sampling stopped
        took["doctor_line"] = [ln for ln in buf.getvalue().splitlines() if "block pairs" in ln][:1]
took["total"] = round(time.perf_counter() - t0, 1)
print(json.dumps(took))
