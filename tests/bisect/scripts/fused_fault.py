"""A fault only fusion triggers: fused kernels that contain erf compute wrong numbers.

It patches fxlens's code generator from inside the script (FXLENS_INJECT hits every kernel with
the op, fused or not, so it cannot model this): single-op kernels (fxlens_nofusion, or
FXLENS_FUSION_LIMIT=0) stay right, and the erf kernel goes wrong as soon as a fusion decision
merges it with its neighbour. Then it runs multi.py (three graphs, erf in the third) with --train.
"""

import os
import runpy
import sys

sys.argv += ["--op", "erf", "--train"]
import fxlens.backend.compile_fx as compile_fx  # noqa: E402

_generate = compile_fx.generate


def generate(kernel, name, persistent, needed, perturb=False):
    # fused ops are inlined into one node; the kernel's name lists them: fxk_<graph>_<i>_erf_mul
    fused_erf = name != "probe" and "erf" in name and len(name.split("_")[3:]) > 1
    return _generate(kernel, name, persistent, needed, perturb=perturb or fused_erf)


compile_fx.generate = generate
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "multi.py"), run_name="__main__")
