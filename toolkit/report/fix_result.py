"""The result of `fxlens fix`: one typed object and its `--json` contract.

`fxlens fix` builds a FixResult when every re-run is done and writes `to_json()` (`--json`); its
text is fxlens.report.fixes.fix_lines, which the report of a session holding fix events shares.
Each fix's own row stays a dict: fxlens.fix builds and judges those rows one at a time, recording
each as a `fix` event as soon as it is measured. It lives in the report layer, below the commands,
for the reason fxlens.report.bisect_result gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report.fixes import fix_lines
from fxlens.report.verdicts import read_fields, result_json

_KINDS = {"argv": list, "base": dict, "fixes": list, "together": dict, "load": dict, "said": list}


@dataclass
class FixResult:
    """`fxlens fix --json`, in the order the fields are written (docs/schemas/fix.schema.json)."""

    script: str | None = None
    argv: list[str] = field(default_factory=list)
    session: str | None = None
    base: dict = field(default_factory=dict)  # the first run: measures, exit_code, seconds, speed
    fixes: list[dict] = field(default_factory=list)  # one row per fix: tried alone, or a patch
    together: dict | None = None  # the fixes that helped, re-run together (null: fewer than two)
    load: dict = field(default_factory=dict)  # load average and cores while it ran
    said: list[str] = field(default_factory=list)  # notes printed before the re-runs

    @classmethod
    def from_json(cls, d: dict) -> FixResult:
        """A recorded result; fields of the wrong type read as absent."""
        found = cls(**read_fields(cls, d, _KINDS))
        found.fixes = [f for f in found.fixes if isinstance(f, dict)]
        return found

    def to_json(self) -> dict:
        """The `--json` dict, every key always written."""
        return result_json(self)

    def summary(self) -> dict:
        """The session's `fix_summary` event: the result without its fix rows (each is an event)."""
        return {k: v for k, v in self.to_json().items() if k != "fixes"}

    def lines(self, speed=None) -> list[str]:
        """One entry per fix, then the fixes together (`speed(fix) -> str`: the --speed figures)."""
        return fix_lines({"fixes": self.fixes, "together": self.together}, speed)
