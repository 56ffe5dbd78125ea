"""The result of `fxlens minify` (the graph reproducer): one typed object, its `--json` contract, and
its document blocks.

`fxlens minify` builds a MinifyResult when it has written and re-run the reproducer, records
`to_json()` (the session's `minify` event, `--json`) and renders `blocks()` for `--format`;
`fxlens report` and the TUI read the event back with `from_json`. It lives in the report layer,
below the commands, for the reason fxlens.report.bisect_result gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fxlens.report.document import Bold, Bullets, Code, Para
from fxlens.report.markup import command_line
from fxlens.report.verdicts import read_fields, result_json, source_and_environment, tool_heading

_KINDS = {k: int for k in ("original_nodes", "final_nodes", "queries", "graph", "graphs", "retries")}
_KINDS.update(
    {k: int for k in ("dynamo_nodes", "original_input_bytes", "final_input_bytes", "interrupted_exit")}
)
_KINDS.update({k: bool for k in ("flaky", "backward", "dynamic", "flaky_in_reduction", "values_saved")})
_KINDS.update(interrupted=bool, seconds=(int, float), values_unsaved=dict, timings=dict)


@dataclass
class MinifyResult:
    """`fxlens minify --json`, in the order the fields are written (docs/schemas/minify.schema.json)."""

    repro: str | None = None  # the reproducer's path
    reproduced: str | None = None  # "3/3": fresh interpreters that failed the same way, of those run
    flaky: bool | None = None
    check: str | None = None
    signature: str | None = None  # the failure the reproducer keeps (exception type and message)
    original_nodes: int | None = None
    final_nodes: int | None = None
    queries: int | None = None
    seconds: float | None = None
    backend: str | None = None
    graph: int | None = None  # which captured graph failed (its index)
    graphs: int | None = None  # graphs captured
    session: str | None = None
    backward: bool | None = None
    level: str | None = None  # the graph reduced: dynamo, forward or backward (AOTAutograd's)
    aot_graph: str | None = None
    dynamo_nodes: int | None = None
    dynamic: bool | None = None
    flaky_in_reduction: bool | None = None
    confirmed_by: str | None = None  # isolated | capture_record
    retries: int | None = None
    values_saved: bool | None = None
    values_unsaved: dict = field(default_factory=dict)  # input -> why its values were not saved
    original_input_bytes: int | None = None
    final_input_bytes: int | None = None
    interrupted: bool | None = None
    interrupted_exit: int | None = None
    aot_note: str | None = field(default=None, metadata={"optional": True})  # why not AOT-level
    timings: dict = field(default_factory=dict)  # seconds per phase
    summary: str | None = None

    @classmethod
    def from_json(cls, d: dict) -> MinifyResult:
        """A recorded result (an event, a `--json` file); fields of the wrong type read as absent."""
        return cls(**read_fields(cls, d, _KINDS))

    def to_json(self) -> dict:
        """The `--json` dict: every field but `aot_note`, written only when there is one."""
        return result_json(self)

    def lines(self) -> list[str]:
        """The verdict as text (`fxlens report` on a minify session): summary and reproducer."""
        import shlex

        lines = [f"verdict: {self.summary}"]
        if self.repro:
            lines.append(f"  reproducer  python {shlex.quote(str(self.repro))}")
        return lines

    def blocks(
        self, script: str | None = None, env: dict | None = None, invocation: dict | None = None
    ) -> list:
        """The result as document blocks, the reproducer's source folded in; INVOCATION: the
        command as typed (session.json has it; the result does not record it)."""
        ps, heading = tool_heading("minify", script)
        out: list = [heading]
        state = f"reproduced {self.reproduced} fresh runs" + (" (FLAKY)" if self.flaky else "")
        out.append(Para(Bold(f"{self.check} failure: {ps.text(self.signature or '')}")))
        facts: list = [
            [
                f"{self.original_nodes} -> {self.final_nodes} nodes in {self.queries} queries, "
                f"{self.seconds or 0:.1f} s; {state}"
            ],
            ["backend: ", Code(str(self.backend))],
        ]
        if invocation:
            facts.insert(0, ["command: ", Code(command_line("minify", invocation, ps))])
        if self.level:
            facts.append(["graph reduced: ", Code(str(self.level))])
        if self.repro:
            run = f"python {ps.path(self.repro)}"
            facts.append(["reproducer: ", Code(ps.path(self.repro)), " (run it: ", Code(run), ")"])
        out.append(Bullets(facts))

        def title(source: str) -> str:
            return f"reproducer {Path(self.repro).name} ({source.count(chr(10))} lines)"

        return out + source_and_environment(self.repro, title, ps, env, self.session)
