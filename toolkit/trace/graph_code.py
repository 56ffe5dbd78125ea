"""Parse printed FX graph code (Dynamo or ATen, as TORCH_TRACE logs it) into node rows.

Torch prints every node as `name: "f32[2, 4][4, 1]cpu" = target(args)`, placeholders in the
`forward(...)` signature with the same annotation, and a `# File: path:line in fn, code: ...`
comment before the nodes a user line produced. That text is all a trace keeps of a graph, so the
node table is read from it: name, op, target, shape, dtype, stride, device and the user's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# f32[2, 4][4, 1]cpu  /  i64[][]cpu  /  f32[s0, 4][4, 1]cuda:0
# (print_readable without include_stride/include_device prints just `f32[2, 4]`)
_ANNOT = re.compile(
    r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?:\[(?P<stride>[^\]]*)\])?(?P<device>[\w:]*)$"
)
_ASSIGN = re.compile(r'^\s+(?P<name>[A-Za-z_]\w*)(?:: "(?P<annot>[^"]*)")? = (?P<rhs>.+)$')
# `x: "f32[2][1]cpu"`, or older releases' `L_x_ : torch.Tensor` (a type, no shape), or a bare name
_PARAM = re.compile(r'(?:^|,)\s*\**(?P<name>[A-Za-z_]\w*)\s*(?::\s*(?:"(?P<annot>[^"]*)"|[^,"]+))?')
_SIGNATURE = re.compile(r"^\s*def forward\(self,?(?P<params>.*)\):\s*$")
_FILE_COMMENT = re.compile(
    r"^\s*# File: (?P<file>.+?):(?P<line>\d+) in (?P<fn>[^,]+)(?:, code: (?P<code>.*))?$"
)
_CALL = re.compile(r"^(?P<target>[A-Za-z_][\w\.]*)\(")
_BINOPS = {
    "+": "operator.add",
    "-": "operator.sub",
    "*": "operator.mul",
    "/": "operator.truediv",
    "//": "operator.floordiv",
    "@": "operator.matmul",
    "**": "operator.pow",
    "%": "operator.mod",
    ">": "operator.gt",
    "<": "operator.lt",
    ">=": "operator.ge",
    "<=": "operator.le",
    "==": "operator.eq",
    "!=": "operator.ne",
    "&": "operator.and_",
    "|": "operator.or_",
}
# Module prefixes of free functions; anything else before a dot is a graph value (a method call).
_MODULES = ("torch", "operator", "math", "builtins", "_operator", "fxlens", "numpy", "np", "F")

#: the columns of the node table, in order
COLUMNS = ("name", "op", "target", "shape", "dtype", "stride", "device", "line")


@dataclass(frozen=True)
class Node:
    """One node of a printed graph."""

    name: str
    op: str  # placeholder, call_function, call_method, call_module, get_attr, output
    target: str
    shape: str
    dtype: str
    stride: str
    device: str
    line_no: int  # 0-based line of the node in the printed code (for the code view)
    source: str = ""  # "file:line" of the user's code that produced it, when torch printed it
    code: str = ""  # the user's source line, when torch printed it

    def cell(self, column: str) -> str:
        """The text of one table column."""
        if column == "line":
            return self.source
        return str(getattr(self, column))


# op namespaces printed without `torch.ops.` (kernel op lists, ATen graphs): `aten.add.Tensor`
_NAMESPACES = ("aten", "prims", "_c10d_functional", "c10d_functional", "_c10d", "higher_order", "quantized")


def op_name(target: str) -> str:
    """An op's short name for a table: `torch.ops._c10d_functional.all_reduce.default` ->
    `all_reduce`, `aten.add.Tensor` -> `add`, `torch.sin` -> `sin` (never the overload's name,
    which printed every collective as "default")."""
    parts = target.split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
        return parts[3]  # torch.ops.<namespace>.<op>[.<overload>]
    if parts[0] in _NAMESPACES and len(parts) >= 2:
        return parts[1]
    return parts[-1]


def _annotation(annot: str | None) -> tuple[str, str, str, str]:
    """(shape, dtype, stride, device) of a `f32[2, 4][4, 1]cpu` annotation, blanks when absent."""
    if not annot:
        return "", "", "", ""
    m = _ANNOT.match(annot.strip())
    if not m:
        return annot, "", "", ""
    stride = f"[{m['stride']}]" if m["stride"] is not None else ""
    return f"[{m['shape']}]", m["dtype"], stride, m["device"]


def _classify(rhs: str) -> tuple[str, str]:
    """(op, target) of a node's right-hand side."""
    rhs = rhs.split(";")[0].strip()
    if m := _CALL.match(rhs):
        target = m["target"]
        head = target.split(".")[0]
        if head == "self":
            return "call_module", target[len("self.") :]
        if head in _MODULES or "." not in target:
            return "call_function", target
        return "call_method", target.split(".")[-1]
    parts = rhs.split()
    if len(parts) == 3 and parts[1] in _BINOPS:
        return "call_function", _BINOPS[parts[1]]
    if rhs.startswith("self."):
        return "get_attr", rhs[len("self.") :]
    if rhs.startswith(("-", "~")):
        return "call_function", "operator.neg" if rhs[0] == "-" else "operator.invert"
    if "[" in rhs and not rhs.startswith(("L[", "(", "[")):
        return "call_function", "operator.getitem"
    return "call_function", rhs[:60]


def parse_graph(code: str) -> list[Node]:
    """Every node of a printed graph, in order: placeholders, ops, then the output.

    Plain aliases Dynamo prints for inputs (`l_x_ = L_x_`) are folded into their placeholder.
    """
    nodes: list[Node] = []
    placeholders: set[str] = set()
    source, src_code = "", ""
    for i, line in enumerate(code.split("\n")):
        if m := _SIGNATURE.match(line):
            for p in _PARAM.finditer(m["params"]):
                shape, dtype, stride, device = _annotation(p["annot"])
                placeholders.add(p["name"])
                nodes.append(Node(p["name"], "placeholder", p["name"], shape, dtype, stride, device, i))
            continue
        if m := _FILE_COMMENT.match(line):
            # the file's base name keeps the column narrow; the code pane shows the full comment
            source, src_code = f"{m['file'].rsplit('/', 1)[-1]}:{m['line']}", (m["code"] or "").strip()
            continue
        stripped = line.strip()
        if stripped.startswith("return "):
            nodes.append(Node("output", "output", "output", "", "", "", "", i, source, src_code))
            continue
        m = _ASSIGN.match(line)
        if not m:
            continue
        rhs = m["rhs"].split(";")[0].strip()
        if m["annot"] is None and rhs in placeholders:
            continue  # `l_x_ = L_x_`: an alias of an input, not a node of its own
        op, target = _classify(rhs)
        shape, dtype, stride, device = _annotation(m["annot"])
        nodes.append(Node(m["name"], op, target, shape, dtype, stride, device, i, source, src_code))
    return nodes


def sort_nodes(nodes: list[Node], column: str, reverse: bool = False) -> list[Node]:
    """Nodes sorted by one column; shapes and strides sort by their numbers, not their text."""

    def key(n: Node):
        v = n.cell(column)
        if column in ("shape", "stride"):
            nums = [int(x) if x.strip().isdigit() else 0 for x in v.strip("[]").split(",") if x.strip()]
            prod = 1
            for x in nums:
                prod *= x
            return (len(nums), prod, v)
        return (0, 0, v)

    return sorted(nodes, key=key, reverse=reverse)


def filter_nodes(nodes: list[Node], query: str) -> list[Node]:
    """Nodes any of whose cells contain `query` (case-insensitive); `col:text` matches one column."""
    q = query.strip().lower()
    if not q:
        return list(nodes)
    if ":" in q and q.split(":", 1)[0] in COLUMNS:
        col, text = q.split(":", 1)
        return [n for n in nodes if text.strip() in n.cell(col).lower()]
    return [n for n in nodes if any(q in n.cell(c).lower() for c in COLUMNS)]


# the patterns above, for readers of printed graphs beyond the node table (doctor's saved tensors)
ANNOTATION, ASSIGNMENT, FILE_COMMENT, PARAMETER, SIGNATURE = (
    _ANNOT,
    _ASSIGN,
    _FILE_COMMENT,
    _PARAM,
    _SIGNATURE,
)
