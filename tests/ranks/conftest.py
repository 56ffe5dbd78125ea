"""Fixtures: N-rank jobs grown from the real 2-rank gloo trace in tests/data/ranks (made once a run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rank_replicas import replicate


@pytest.fixture(scope="session")
def job_1024(build_once) -> Path:
    """1024 ranks: rank 777 recompiles `forward` on its short last batch, the others do not."""
    return build_once("ranks-1024", lambda d: replicate(d / "trace", 1024, (777,))) / "trace"


@pytest.fixture(scope="session")
def job_many_outliers(build_once) -> Path:
    """64 ranks, four of them outliers (5, 6, 7 and 40): one group, its ranks as ranges."""
    return build_once("ranks-64", lambda d: replicate(d / "trace", 64, (5, 6, 7, 40))) / "trace"


@pytest.fixture(scope="session")
def job_inductor_outlier(build_once) -> Path:
    """16 ranks of a real inductor trace; rank 9's inductor wrote other code for the same graph."""
    from rank_replicas import inductor_log, replicate_logs

    def build(d: Path) -> None:
        replicate_logs(d / "trace", 16, inductor_log("fused"), inductor_log("scalar"), (9,))

    return build_once("ranks-inductor", build) / "trace"


@pytest.fixture(scope="session")
def job_failing_1024(build_once) -> Path:
    """1024 ranks whose backend fails, naming its rank ("rank 5: ..."); rank 1000 fails another way.

    Two real runs of tests/report/scripts/rank_failure.py (RANK=0; RANK=1 ODD=1), each copy's rank
    number set to its own, as each rank of a real job would have logged it.
    """
    import os
    import re
    import subprocess
    import sys

    from rank_replicas import replicate_logs

    script = Path(__file__).resolve().parents[1] / "report" / "scripts" / "rank_failure.py"

    def run(d: Path, env: dict) -> str:
        env = {**os.environ, "TORCH_TRACE": str(d), **env}
        proc = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (log,) = d.glob("*.log")
        return log.read_text()

    def build(d: Path) -> None:
        alike, odd = run(d / "a", {"RANK": "0"}), run(d / "b", {"RANK": "1", "ODD": "1"})
        renumber = lambda text, r: re.sub(r"\brank \d+:", f"rank {r}:", text)  # noqa: E731
        replicate_logs(d / "trace", 1024, alike, odd, (1000,), renumber)

    return build_once("ranks-failing-1024", build) / "trace"
