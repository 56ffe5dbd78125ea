"""Record the 2-rank gloo trace in this folder: `python record_gloo.py OUTDIR` (2 local processes).

Both ranks train a small compiled model for 4 steps on batches of 8; rank 1's last batch is short (5
rows), so rank 1 alone recompiles `forward` (input x, dim 0: 8 -> 5). That is the classic hang of a
real job: one rank compiles differently while the others wait in the collective. The tests replicate
rank 0 to hundreds of ranks and put rank 1's log among them.
"""

import os
import socket
import subprocess
import sys


def _launch(out: str) -> None:
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env = {
        **os.environ,
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        "TORCH_TRACE": out,
    }
    procs = [subprocess.Popen([sys.executable, __file__], env={**env, "RANK": str(r)}) for r in range(2)]
    sys.exit(max(p.wait() for p in procs))


def _train() -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(16, 32)
            self.fc2 = torch.nn.Linear(32, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    model = Net()
    compiled = torch.compile(model, backend="aot_eager")
    for step in range(4):
        batch = 5 if (rank == 1 and step == 3) else 8  # rank 1's last batch is short
        loss = compiled(torch.randn(batch, 16)).pow(2).mean()
        loss.backward()
        for p in model.parameters():  # the gradient all-reduce DDP would do
            dist.all_reduce(p.grad)
            with torch.no_grad():
                p -= 0.01 * p.grad / 2
            p.grad = None
    dist.destroy_process_group()


if __name__ == "__main__":
    if "RANK" in os.environ:
        _train()
    else:
        _launch(sys.argv[1])
