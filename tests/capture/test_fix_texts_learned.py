"""Fix texts that learned from torch 2.13, each checked by applying the fix by hand in a fresh
interpreter (ground truth: whether torch raises, and how many recompiles TORCH_LOGS=recompiles lists).

- `mark_dynamic` of an HF model's `input_ids` seq dim raises ConstraintViolationError (the model ties
  it to `attention_mask`'s) and `maybe_mark_dynamic` leaves the recompile: the text gives
  `dynamic=True` (which compiles once) and marking every input of that length.
- a Python float argument: `specialize_float=False` changes nothing (2.13's default), `dynamic=True`
  compiles once.
"""

import os
import subprocess
import sys

import pytest
from capture_helpers import SCRIPTS
from forked import forked_runs


def _outcome(returncode: int, stderr: str) -> tuple[int, str]:
    """(recompiles torch logged, the error the script died of, '' when none)."""
    errors = [ln for ln in stderr.splitlines() if ln and not ln[0].isspace() and "Error" in ln]
    died = "" if returncode == 0 else (errors[-1] if errors else stderr[-300:])
    return stderr.count("Recompiling function"), died


def _by_hand(script: str, mode: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / script), mode],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "recompiles"},
        timeout=600,
    )
    return _outcome(proc.returncode, proc.stderr)


def _by_hand_forked(script: str, modes: list[str], tmp_path) -> dict[str, tuple[int, str]]:
    """`_by_hand` for several modes, each in a child forked from one interpreter with torch imported
    (one torch import instead of one a mode)."""
    runs = [(mode, "") for mode in modes]
    got = forked_runs(SCRIPTS / script, runs, tmp_path, {"TORCH_LOGS": "recompiles"})
    return {mode: _outcome(*rc_err) for mode, rc_err in zip(modes, got)}


@pytest.mark.slow
def test_hf_seq_dim_gets_what_torch_accepts(run_report):
    proc, report = run_report("bert_seq")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (cause,) = [c for c in report["recompile_causes"] if c["kind"] == "size"]
    assert "dynamic=True" in cause["fix"] and "ConstraintViolationError" in cause["fix"]
    # dynamic=True first; the mark too (where nothing ties the dims it is what works): fix measures both
    assert [a["kind"] for a in cause["actions"]] == ["dynamic", "mark_dynamic"]
    # by hand: what the text warns of, and what it recommends
    _, died = _by_hand("bert_seq.py", "mark")
    assert "ConstraintViolationError" in died
    n_maybe, died_maybe = _by_hand("bert_seq.py", "maybe")
    n_dyn, died_dyn = _by_hand("bert_seq.py", "dynamic")
    n_none, _ = _by_hand("bert_seq.py", "")
    assert not died_maybe and not died_dyn
    assert n_dyn == 0 and n_none >= 1 and n_maybe == n_none  # why maybe_mark_dynamic is not the fix


def test_float_argument_gets_dynamic_true(run_report, tmp_path):
    proc, report = run_report("float_arg")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (cause,) = report["recompile_causes"]
    assert cause["kind"] == "value" and "dynamic=True" in cause["fix"]
    assert [a["kind"] for a in cause["actions"]] == ["dynamic"]
    assert cause["actions"][0]["params"]["function"] == "scaled"
    got = _by_hand_forked("float_arg.py", ["", "specialize_float", "dynamic"], tmp_path)
    (n_none, _), (n_spec, _), (n_dyn, _) = got[""], got["specialize_float"], got["dynamic"]
    assert n_none >= 1 and n_spec == n_none  # the switch the old text gave does nothing on 2.13
    assert n_dyn == 0
