"""Runs a script as `fxlens doctor --warm`'s bundle runs do: `python warmrun.py save|load BUNDLE
SCRIPT [ARGS...]`. `save`: after the script, write torch's portable cache
(`torch.compiler.save_cache_artifacts()`) to BUNDLE; `load`: before it, load BUNDLE
(`torch.compiler.load_cache_artifacts`) and write the seconds that took to BUNDLE.load_s."""

import os
import runpy
import sys
import time


def main() -> None:
    mode, bundle, script, *args = sys.argv[1:]
    import torch

    if mode == "load":
        t = time.perf_counter()
        with open(bundle, "rb") as f:
            torch.compiler.load_cache_artifacts(f.read())
        with open(bundle + ".load_s", "w") as f:
            f.write(f"{time.perf_counter() - t:.6f}")
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        if mode == "save":
            got = torch.compiler.save_cache_artifacts()
            if got:
                with open(bundle, "wb") as f:
                    f.write(got[0])


if __name__ == "__main__":
    main()
