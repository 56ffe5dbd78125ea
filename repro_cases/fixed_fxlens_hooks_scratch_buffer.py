# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11): with
# FXLENS_CHECK_KERNELS=1 (or FXLENS_KERNEL_FALLBACK naming it), a kernel that only fills a scratch
# buffer no FX node computes (histc's zero-filled histogram) crashed the replay with
# "KeyError: None"; such a kernel now runs as it is and the counting kernel is checked.
# expect: exit 0
import os
import sys

os.environ["FXLENS_CHECK_KERNELS"] = "1"

import torch  # noqa: E402


def fn(x):
    return torch.histc(x * 1.5, bins=7, min=-3, max=3)


if __name__ == "__main__":
    x = torch.randn(300, generator=torch.Generator().manual_seed(0)) * 3
    try:
        got = torch.compile(fn, backend="fxlens")(x)
    except Exception as e:
        print(
            f"fxlens-signature: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
            file=sys.stderr,
        )
        sys.exit(1)
    if not torch.equal(got, fn(x)):
        print("fxlens-signature: AccuracyError: compiled histogram differs from eager", file=sys.stderr)
        sys.exit(1)
    print("ok")
