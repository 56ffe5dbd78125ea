# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): complex
# results (x.cfloat(), torch.fft.*, torch.full with a complex value) crashed the fxlens backend with
# `KeyError: torch.complex64` in its Triton codegen. Whatever the backend cannot lower must become a
# recorded ATen fallback with its reason (the `fxlens_fallbacks` artifact), never an exception.
# expect: exit 0
import sys

import torch

from fxlens.backend import compile_fx


def fn(x):
    c = x.cfloat() * 2
    return c.real + torch.fft.fft2(x).abs() + torch.full((4, 3), 1 + 2j).imag, x.chalf()


if __name__ == "__main__":
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    compile_fx.COMPILED.clear()
    try:
        got = torch.compile(fn, backend="fxlens")(x)
    except Exception as e:  # the bug: an exception from fxlens's codegen
        print(f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(1)
    want = fn(x)
    reasons = {op: why for call in compile_fx.COMPILED for op, why in call.fallback_reasons.items()}
    if not torch.allclose(got[0], want[0], atol=1e-5) or not bool((got[1].cfloat() == want[1].cfloat()).all()):
        print("fxlens-signature: AccuracyError: compiled output diverges from eager", file=sys.stderr)
        sys.exit(1)
    if not any("complex64" in why for why in reasons.values()):
        print(f"no complex fallback reason recorded: {reasons}", file=sys.stderr)
        sys.exit(1)
    print("ok", reasons)
