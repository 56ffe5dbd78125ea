# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): float32 ->
# bfloat16 under backend="fxlens" rounded toward zero (the Triton interpreter's `.to(tl.bfloat16)`
# truncates), so about half of `torch.randn(10000) * 10` differed from eager by up to 0.25
# (-4.3388 gave -4.3125, eager -4.34375). Casts must be bit-exact: fp32/fp64 -> bf16/fp16, and a
# bf16 value computed in a kernel and then upcast (eager rounds it at the cast).
# expect: exit 0
import sys

import torch


def casts(x):
    return (x.bfloat16(), x.half(), x.double().bfloat16(), (x.bfloat16() * 3).float(), x.half().bfloat16())


def bits(t):
    return t.view(torch.int16) if t.element_size() == 2 else t


if __name__ == "__main__":
    x = torch.randn(10000, generator=torch.Generator().manual_seed(0)) * 10
    x[:5] = torch.tensor([float("nan"), float("inf"), -float("inf"), 3.4e38, -0.0])
    eager, compiled = casts(x), torch.compile(casts, backend="fxlens")(x)
    for i, (e, c) in enumerate(zip(eager, compiled)):
        differ = (bits(e) != bits(c)) & ~(e.isnan() & c.isnan())
        if c.dtype != e.dtype or bool(differ.any()):
            print(f"cast {i}: {int(differ.sum())} of {e.numel()} elements differ from eager", file=sys.stderr)
            print("fxlens-signature: AccuracyError: compiled cast is not bit-exact with eager", file=sys.stderr)
            sys.exit(1)
    print("ok")
