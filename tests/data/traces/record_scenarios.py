"""Record the TORCH_TRACE scenarios of torch's test/dynamo/test_structured_trace.py that tlparse's own
test inputs lack, into tests/data/traces/<torch version>/scenarios/<name>/ (run it with that torch):

- `ddp`: DistributedDataParallel on 2 gloo ranks, compiled with the DDP optimizer on (the default),
  buckets small enough that Dynamo's graph is split (`optimize_ddp_split_graph`, `_child` records);
- `compiled_autograd`: a backward run under compiled autograd (compile ids `!0/0/0`, the
  `compiled_autograd_graph` record);
- `dump_file`: a compiled torch.fx GraphModule, whose generated code torch logs as `dump_file`;
- `make_fx_fail`: make_fx on a function that raises mid-trace (`make_fx_fail_partial`).

Usage: python record_scenarios.py OUTDIR   (then trim.py each log, as README.md says). Each scenario
runs in its own process(es) with TORCH_TRACE=OUTDIR/<name>; the script copies itself to a fixed
path first, as record.py's README asks, so the logs name the same file on every machine.
"""

import os
import socket
import subprocess
import sys


def ddp() -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    torch.manual_seed(0)

    class Toy(torch.nn.Module):  # the user's own module: Dynamo compiles its forward under DDP
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(512, 512) for _ in range(3))

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return x

    model = Toy()
    # 1 MB buckets (DDP's first bucket is 1 MB too): each Linear (1 MB of weights) fills one, so
    # the DDP optimizer splits Dynamo's graph at every layer
    compiled = torch.compile(DDP(model, bucket_cap_mb=1), backend="aot_eager")
    compiled(torch.randn(8, 512)).sum().backward()
    dist.destroy_process_group()


def compiled_autograd() -> None:
    import torch

    model = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)

    @torch.compile(backend="aot_eager")
    def step(x):
        return model(x).relu().sum()

    with torch._dynamo.compiled_autograd._enable(torch.compile(backend="aot_eager")):
        step(x).backward()


def dump_file() -> None:
    import torch
    import torch.fx as fx

    def f(x, y):
        return x.add(y).sin()

    gm = fx.symbolic_trace(f)
    torch.compile(gm, backend="eager")(torch.randn(3), torch.randn(3))


def make_fx_fail() -> None:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x):
        y = x + 1  # noqa: F841 -- traced before the error: the partial graph holds it
        raise RuntimeError("boo")  # after one op: the partial graph holds `add`

    try:
        make_fx(f)(torch.randn(2))
    except RuntimeError:
        pass


SCENARIOS = {
    "ddp": ddp,
    "compiled_autograd": compiled_autograd,
    "dump_file": dump_file,
    "make_fx_fail": make_fx_fail,
}


def _run(out: str, name: str) -> None:
    env = {**os.environ, "TORCH_TRACE": os.path.join(out, name), "FXLENS_SCENARIO": name}
    if name != "ddp":
        subprocess.run([sys.executable, __file__], env=env, check=True)
        return
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env.update(WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    procs = [subprocess.Popen([sys.executable, __file__], env={**env, "RANK": str(r)}) for r in range(2)]
    if any(p.wait() for p in procs):
        sys.exit(f"{name}: a rank failed")


if __name__ == "__main__":
    if "FXLENS_SCENARIO" in os.environ:
        SCENARIOS[os.environ["FXLENS_SCENARIO"]]()
    else:
        for scenario in sys.argv[2:] or SCENARIOS:
            _run(sys.argv[1], scenario)
