"""The result of `fxlens bisect`: one typed object, its `--json` contract, and its document blocks.

`fxlens bisect` builds a BisectResult when it finishes, writes `to_json()` (the session's `bisect`
event, `--json`), and renders `blocks()` for `--format markdown/html`; `fxlens report` on a bisect
session reads the event back with `from_json` and asks the same object for its lines and blocks.
It lives in the report layer, below the commands, because the report and the TUI may not import a
command package (docs/design.md, the layer table) and both show a bisect's verdict.

Events come from a file anyone may have edited: `from_json` keeps a field only when it has the
type the contract gives it, so a renderer never meets a string where it expects a list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxlens.report.document import Bold, Bullets, Code, Para
from fxlens.report.markup import PathShortener, command_line
from fxlens.report.verdicts import read_fields, records, result_json, source_and_environment, tool_heading


@dataclass
class Culprit:
    """The graph (and the fxlens kernel, at stage fxlens) that fails alone."""

    compile_id: str | None = None
    function: str | None = None
    file: str | None = None
    line: int | None = None
    kernel: str | None = None  # null unless the culprit stage is fxlens's own
    ops: list[str] | None = None

    @classmethod
    def from_json(cls, d) -> Culprit | None:
        if not isinstance(d, dict):
            return None
        found = cls(**read_fields(cls, d, {"line": int, "ops": list}))
        found.ops = [str(o) for o in found.ops] if found.ops is not None else None
        return found

    def to_json(self) -> dict:
        return result_json(self)


@dataclass
class StageRow:
    """One stage bisect ran: whether it passed under the --check, the error it failed with (also
    one the --check does not follow), and a note (why a stage whose graph raised is ok)."""

    stage: str | None = None
    ok: bool | None = None
    error: str | None = None
    note: str | None = field(default=None, metadata={"optional": True})

    @classmethod
    def from_json(cls, d: dict) -> StageRow:
        return cls(**read_fields(cls, d, {"ok": bool}))

    def to_json(self) -> dict:
        return result_json(self)


# the JSON type of each field that is not a string
_KINDS = {k: list for k in ("ladder", "references", "stages", "run_times")}
_KINDS.update(
    dict.fromkeys(("kernel", "fusion", "compiler_bisector", "failure", "graph", "invocation"), dict)
)
_KINDS.update(runs=int, seconds=(int, float))


@dataclass
class BisectResult:
    """`fxlens bisect --json`: the fields in the order they are written (docs/schemas/bisect.schema.json)."""

    backend: str | None = None
    ladder: list[str] = field(default_factory=list)
    first_failing_stage: str | None = None
    culprit: Culprit | None = None
    kernel: dict | None = None  # the culprit kernel: name, ops, source_path, max_abs_err, graph
    fusion: dict | None = None  # the fusion decision that breaks it (stage fxlens)
    compiler_bisector: dict | None = None  # torch's CompilerBisector hand-over
    failure: dict | None = None  # kind, error, divergence, outside_graphs, vs_eager, eager_diff, site
    graph: dict | None = None  # ordinal, of (to: a span of graphs; from: where it was read)
    references: list[str] = field(default_factory=list)  # the script's reference calls, not stepped
    stages: list[StageRow] = field(default_factory=list)  # one row per stage tried
    outcome: str | None = (
        None  # fails | needs_several_graphs | eager_fails | script_fails | flaky | nothing_fails
    )
    check: str | None = None
    runs: int | None = None
    seconds: float | None = None
    run_times: list[dict] = field(default_factory=list)
    session: str | None = None
    summary: str | None = None
    next: str | None = None  # the follow-up command (a minify of the culprit stage)
    invocation: dict | None = None  # the command as typed: script, module, argv, backend, check, env

    def __post_init__(self) -> None:
        if isinstance(self.culprit, dict):  # built by the command from its parts
            self.culprit = Culprit.from_json(self.culprit)
        self.stages = records(self.stages, StageRow)  # rows the command built, or read back

    @classmethod
    def from_json(cls, d: dict) -> BisectResult:
        """A recorded verdict (an event, a `--json` file); fields of the wrong type read as absent."""
        found = cls(**{**read_fields(cls, d, _KINDS), "culprit": Culprit.from_json(d.get("culprit"))})
        found.run_times = [t for t in found.run_times if isinstance(t, dict)]
        return found

    def to_json(self) -> dict:
        """The `--json` dict, every key always written (null when it does not apply)."""
        return result_json(self)

    # -- rendering ---------------------------------------------------------------------------------

    def stage_ladder(self) -> str:
        """`eager ok -> aot_eager ok -> fxlens FAILS` (the run without torch.compile left out)."""
        return " -> ".join(
            f"{s.stage} {'ok' if s.ok else 'FAILS'}" for s in self.stages if s.stage != "no_compile"
        )

    def lines(self) -> list[str]:
        """The gist of the verdict as text (`fxlens report` on a bisect session): summary, stages,
        failure, culprit graph and kernel, runs, next command."""
        lines = [f"verdict: {self.summary}"]
        if ladder := self.stage_ladder():
            lines.append(f"  stages   {ladder}")
        if self.failure:
            lines.append(f"  failure  {self.failure.get('kind')}: {self.failure.get('error')}")
        c = self.culprit or Culprit()
        if c.compile_id:
            lines.append(f"  graph    {c.compile_id}  {c.function}  {c.file}:{c.line}")
        if c.kernel:
            lines.append(f"  kernel   {c.kernel}  ops {', '.join(map(str, c.ops or []))}")
        lines.append(f"  runs     {self.runs} in {float(self.seconds or 0):.1f}s")
        if self.next:
            lines.append(f"next: {self.next}")
        return lines

    def blocks(
        self, script: str | None = None, env: dict | None = None, invocation: dict | None = None
    ) -> list:
        """The verdict as document blocks: facts, the culprit kernel's source, the environment;
        INVOCATION: the command as session.json has it, for a verdict recorded without its own."""
        ps, heading = tool_heading("bisect", script)
        out = [
            heading,
            Para(Bold(f"verdict: {ps.text(self.summary or '')}")),
            Bullets(self._facts(ps, script, invocation)),
        ]
        k = self.kernel or {}
        title = f"kernel {k.get('name')} (Triton source)"
        return out + source_and_environment(k.get("source_path"), lambda _: title, ps, env, self.session)

    def _facts(self, ps: PathShortener, script: str | None, invocation: dict | None) -> list:
        facts: list = []
        if self.invocation or invocation or script:  # the whole command: arguments, -m, switches
            inv = self.invocation or invocation or {"script": script, "check": self.check}
            facts.append(["command: ", Code(command_line("bisect", inv, ps))])
        if ladder := self.stage_ladder():
            facts.append(["stages: ", Code(ladder)])
        if self.failure:
            facts.append(["failure: ", ps.text(f"{self.failure.get('kind')}: {self.failure.get('error')}")])
        c = self.culprit or Culprit()
        if c.compile_id:
            facts.append(["culprit graph: ", Code(f"{c.compile_id} {c.function} {ps.path(c.file)}:{c.line}")])
        k = self.kernel or {}
        if k.get("name"):
            facts.append(["culprit kernel: ", Code(k["name"]), " ops ", Code(", ".join(k.get("ops") or []))])
        f = self.fusion or {}
        if f.get("decision"):
            facts.append(
                ["fusion decision: ", ps.text(f"{f['decision']} of {f.get('of')}: {f.get('detail') or ''}")]
            )
        cb = self.compiler_bisector or {}
        if cb.get("subsystem") or cb.get("error"):
            said = (
                cb.get("error") or f"{cb.get('backend')} / {cb.get('subsystem')} #{cb.get('bisect_number')}"
            )
            facts.append(["torch CompilerBisector: ", ps.text(said)])
        facts.append([f"{self.runs} runs in {self.seconds or 0:.1f} s"])
        if self.next:
            facts.append(["next: ", Code(ps.text(self.next))])
        return facts
