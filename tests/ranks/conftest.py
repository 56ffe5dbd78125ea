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
