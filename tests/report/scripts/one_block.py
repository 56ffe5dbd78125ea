"""Ground truth for a repeated block's measured cost: one Block of repeated_blocks.py compiled alone,
by hand, in a fresh interpreter. The whole model is compiled first (as repeated_blocks.py does: the
process's one-time compile costs are then paid), then one Block instance alone, ROUNDS times
(`torch._dynamo.reset()` between); each round's torch seconds for that frame (its
`bytecode_tracing` time: Dynamo tracing the block, the part fxlens attributes to lines; and its
Dynamo seconds, the frame less the backend) are written as JSON to the path in argv[1]."""

import json
import sys
from pathlib import Path

import torch
from torch._dynamo import utils

sys.path.insert(0, str(Path(__file__).parent))
from repeated_blocks import Block, Net  # noqa: E402

ROUNDS = 5

net, x = Net(), torch.randn(3, 8)
torch.compile(net, backend="eager")(x)
block = net.blocks[0]
rounds = []
for _ in range(ROUNDS):
    torch._dynamo.reset()
    before = sum(utils.compilation_time_metrics.get("bytecode_tracing", []))
    block.forward = torch.compile(Block.forward.__get__(block), backend="eager")
    net(x)
    del block.forward
    m = utils.get_compilation_metrics()[-1]
    rounds.append(
        {
            "tracing_s": sum(utils.compilation_time_metrics.get("bytecode_tracing", [])) - before,
            "dynamo_s": m.entire_frame_compile_time_s - (m.backend_compile_time_s or 0.0),
            "co_name": m.co_name,
        }
    )
Path(sys.argv[1]).write_text(json.dumps(rounds))
