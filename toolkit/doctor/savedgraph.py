"""Which op and user line produced each tensor a compiled graph saves for backward, from the trace.

AOTAutograd's backward graph takes the forward's saved tensors first, in the order the forward
saved them, then its tangents. The probe sees that order at run time (the pack hook of
`saved_tensors_hooks` fires once per saved tensor, shapes only); the `aot_backward_graph` whose
inputs have the same shapes is that graph, and the `aot_forward_graph` of the same compile names the
node that computed each of them, under the `# File: path:line in fn, code: ...` comment torch
prints before the nodes a user line made. Pure text reading: no torch.
"""

from __future__ import annotations

from fxlens.trace.graph_code import ANNOTATION as _ANNOT
from fxlens.trace.graph_code import ASSIGNMENT as _ASSIGN
from fxlens.trace.graph_code import FILE_COMMENT as _FILE_COMMENT
from fxlens.trace.graph_code import PARAMETER as _PARAM
from fxlens.trace.graph_code import SIGNATURE as _SIGNATURE
from fxlens.trace.graph_code import op_name


def _shape(annot: str | None) -> list[str] | None:
    """`f32[64, 512][512, 1]cpu` -> ['64', '512']; None for a non-tensor (a SymInt)."""
    m = _ANNOT.match((annot or "").strip())
    if not m or m["dtype"].startswith("Sym"):
        return None
    return [d.strip() for d in m["shape"].split(",") if d.strip()]


def _signature(code: str) -> str:
    """The parameters of `def forward(...)`, on one line or (torch 2.9 on) one per line."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        if m := _SIGNATURE.match(line):
            return m["params"]
        if line.strip() == "def forward(":
            params = []
            for ln in lines[i + 1 :]:
                if ln.strip().startswith("):"):
                    break
                params.append(ln.split("  # ")[0].strip())
            return " ".join(params)
    return ""


def backward_saved(code: str) -> list[tuple[str, list[str]]]:
    """(name, shape) of a backward graph's saved-tensor inputs, in order (tangents left out)."""
    out = []
    for p in _PARAM.finditer(_signature(code)):
        shape = _shape(p["annot"])
        if shape is not None and not p["name"].startswith("tangents_"):
            out.append((p["name"], shape))
    return out


def forward_nodes(code: str) -> dict[str, dict]:
    """name -> {op, file, line, code} of every node of a printed forward graph."""
    out: dict[str, dict] = {}
    where: dict = {"file": None, "line": None, "code": ""}
    for line in code.split("\n"):
        if m := _FILE_COMMENT.match(line):
            where = {"file": m["file"], "line": int(m["line"]), "code": (m["code"] or "").strip()}
            continue
        if m := _ASSIGN.match(line):
            rhs = m["rhs"].split(";")[0].strip()
            target = rhs.split("(", 1)[0] if "(" in rhs else rhs
            out[m["name"]] = {"op": op_name(target), "target": target, "shape": _shape(m["annot"]), **where}
    return out


def rebase_files(code: str, current: list[str]) -> str:
    """`code` (an AOT graph) with each `# File:` path the run did not trace replaced by the path of
    this run's Dynamo graphs (`current`) that has the same base name, line and code.

    AOTAutograd's and inductor's caches key a graph by its code, not its source file: on a cache
    hit torch logs the graphs saved by the run that filled the cache, whose comments name that
    run's copy of the script (another folder, a deleted temporary file). Dynamo traces anew every
    run, so its graphs name the files this run executes."""
    here: dict[tuple, str] = {}
    for c in current:
        for line in c.split("\n"):
            if m := _FILE_COMMENT.match(line):
                here[(m["file"].rsplit("/", 1)[-1], m["line"], (m["code"] or "").strip())] = m["file"]
    paths = set(here.values())
    out = []
    for line in code.split("\n"):
        m = _FILE_COMMENT.match(line)
        if m and m["file"] not in paths:
            now = here.get((m["file"].rsplit("/", 1)[-1], m["line"], (m["code"] or "").strip()))
            if now is not None:
                line = line[: m.start("file")] + now + line[m.end("file") :]
        out.append(line)
    return "\n".join(out)


def _same_shapes(order: list[dict], saved: list[tuple[str, list[str]]]) -> bool:
    return len(order) == len(saved) and all(
        [str(d) for d in o["shape"]] == shape for o, (_, shape) in zip(order, saved)
    )


def name_saved(order: list[dict], graphs: list[tuple[str, str]]) -> list[dict] | None:
    """Each saved tensor of `order` (the probe's, in save order) with the op and line that made it.

    `graphs` holds (forward code, backward code) per compile; the first whose backward inputs have
    the shapes of `order` is the graph that ran. None when none matches.
    """
    for fw, bw in graphs:
        saved = backward_saved(bw)
        if not _same_shapes(order, saved):
            continue
        nodes = forward_nodes(fw)
        return [
            {**nodes.get(name, {"op": "input" if name.startswith("primals_") else "?"}), **o, "node": name}
            for o, (name, _) in zip(order, saved)
        ]
    return None


def name_constant(shape: list, graphs: list[str]) -> dict | None:
    """The Dynamo graph attribute (`self.getitem_1`: a constant Dynamo made while tracing) of this
    shape, with the user's line that made it: a held tensor's name when the compiled code kept no
    graph to read it from."""
    want = [str(d) for d in shape]
    for code in graphs:
        for name, node in forward_nodes(code).items():
            if node["target"].startswith("self.") and node["shape"] == want and node["file"]:
                return {"name": name, "file": node["file"], "line": node["line"], "code": node["code"]}
    return None
