"""Compile clearly helps: 32 cheap pointwise ops that inductor fuses into one C++/Triton loop.

`python helps.py [CALLS]` (default 40). Eager makes 32 passes over 1 MiB, the fused loop one (~5x).
"""

import sys

import torch

# one thread each way: on a shared 2-core box, OpenMP barriers wait on descheduled threads and
# drown the difference being measured (inductor generates its loops for this thread count)
torch.set_num_threads(1)


def chain(x):  # line 15
    for _ in range(16):  # 32 cheap ops: eager makes 32 passes over memory, the fused loop one
        x = x * 1.1 + 0.5
    return x


fused = torch.compile(chain, backend="inductor")  # line 21
x = torch.randn(1 << 18)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 40):
    y = fused(x)
print(float(y.sum()))
