"""A config fix holds against a script that sets the same switch itself: `fxlens fix` sets it
before the script runs and again as each compile starts (fxlens.fix.child._keep_configs)."""

import json
import subprocess
import sys

CHILD = """
import json
import torch
import torch._functorch.config as F
from fxlens.fix.child import _at_start

applied, notes = {}, {}
_at_start([{"kind": "config", "params": {"name": "functorch.activation_memory_budget", "value": 0.5}}],
          applied, notes)
F.activation_memory_budget = 1.0  # what a script's own top line would do
seen = []

def backend(gm, example_inputs):
    seen.append(F.activation_memory_budget)  # what the compiler reads while compiling
    return gm.forward

torch.compile(lambda x: x.sin() + 1, backend=backend)(torch.ones(3))
print(json.dumps({"applied": list(applied), "notes": notes, "seen": seen}))
"""


def test_a_config_fix_is_set_again_as_each_compile_starts():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["applied"] == [0] and out["notes"] == {}
    assert out["seen"] == [0.5]  # the script's 1.0 lasted only until the compile started
