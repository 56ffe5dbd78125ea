# fxlens corpus case: a fixed bug kept as a regression test (DESIGN.md style rule 11; issue 21.3).
# Two `fxlens minify` runs of one script at once both printed repro_cases/minify_<script>_..._crash.py:
# each picked the first free name, verified its reproducer for minutes, then wrote that name, so
# the second replaced the first's file. Names are now claimed with O_EXCL when chosen. Two
# processes claim one default name at the same moment, five times: ten distinct files.
# expect: exit 0
import multiprocessing
import sys
import tempfile
from pathlib import Path

from fxlens.minify.repro_writer import claim


def _claim(barrier, target, queue):
    barrier.wait()
    queue.put(str(claim(target)))


if __name__ == "__main__":
    target = Path(tempfile.mkdtemp()) / "minify_script_inductor_crash.py"
    ctx = multiprocessing.get_context("fork")
    got = []
    for _ in range(5):
        barrier, queue = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_claim, args=(barrier, target, queue)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        got += [queue.get(timeout=10), queue.get(timeout=10)]
    print(*sorted(Path(g).name for g in got), sep="\n")
    sys.exit(0 if len(set(got)) == 10 else 1)
