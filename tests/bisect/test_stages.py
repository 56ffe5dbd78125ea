"""The stage table (fxlens.backend.stages.STAGES) against what it describes: pyproject's entry
points, the installed distribution's, torch's backend registry, and the lists derived from it."""

import importlib
import importlib.metadata
from pathlib import Path

import tomllib

from fxlens.backend.stages import STAGES, capture_only, stage
from fxlens.capture.backends import ALWAYS_KNOWN, resolve
from fxlens.minify.repro_writer import INNER_COMPILERS

ROOT = Path(__file__).resolve().parents[2]
OURS = {s.name: s.entry for s in STAGES if s.entry}


def test_pyproject_entry_points_are_the_rows():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["torch_dynamo_backends"] == OURS


def test_installed_entry_points_are_the_rows():
    # a stale editable install (pyproject changed, not reinstalled) fails here, not in a bisect child
    eps = importlib.metadata.entry_points(group="torch_dynamo_backends")
    assert {ep.name: ep.value for ep in eps if ep.value.startswith("fxlens.")} == OURS


def test_every_row_is_a_backend_torch_resolves():
    for s in STAGES:
        assert resolve(s.name) == s.name
        if s.entry:
            module, _, attr = s.entry.partition(":")
            assert callable(getattr(importlib.import_module(module), attr))
    assert {s.name for s in STAGES} <= ALWAYS_KNOWN


def test_derived_lists_follow_the_columns():
    assert capture_only("fxlens_aot_eager") and capture_only("torch.aot_eager")
    assert not capture_only("fxlens") and not capture_only("inductor") and not capture_only("mine.py:be")
    for s in STAGES:
        assert capture_only(s.name) == s.capture_only
        assert not (s.capture_only and (s.codegen or s.fuses)), s  # a capture-only stage compiles nothing
        assert s.inner is None or s.inner in INNER_COMPILERS, s
    assert stage("my_backend") is None
