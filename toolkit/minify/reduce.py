"""Reduction passes over a failing candidate, fastest first, each keeping the failure signature.

A pass proposes candidates; `Reducer.test` evaluates them on the worker pool (memoised by the
candidate's canonical hash) and a candidate is kept only when it fails with the very signature
being minified. Every pass is a function `(reducer, candidate) -> candidate` in PASSES.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from fxlens.backend.torch_compat import OpOverload
from fxlens.live.progress import Progress
from fxlens.minify.graph import Candidate, contiguous_stride, halve, rebuild, tensor_spec, with_inputs

#: how many more times a candidate that passes is tried when the failure being minified is flaky
FLAKY_RETRIES = 3


class Reducer:
    """Test candidates for "still fails the same way", counting queries and tracking the best."""

    def __init__(
        self,
        evaluate: Callable[[list[str]], list[str | None]],
        render: Callable[[Candidate], str],
        signature: str,
        parallel: int,
        progress: Callable[[Reducer], None] | None = None,
        retries: int = 0,
    ):
        self.evaluate, self.render, self.signature = evaluate, render, signature
        self.retries = retries  # flaky failure: a passing candidate is tried up to this many more times
        self.retried = 0  # queries spent on those retries
        self.parallel = max(1, parallel)
        self.memo: dict[str, str | None] = {}
        self.queries = 0
        self.best: Candidate | None = None
        self.stage = ""
        self.progress = progress

    def test(self, cands: list[Candidate]) -> list[bool]:
        """Which of `cands` fail with the signature (unknown ones evaluated in parallel)."""
        keys = [c.key() for c in cands]
        todo = {}
        for k, c in zip(keys, cands):
            if k not in self.memo and k not in todo:
                todo[k] = c
        if todo:
            srcs = {k: self.render(c) for k, c in todo.items()}
            sigs = self.evaluate(list(srcs.values()))
            self.queries += len(todo)
            self.memo.update(zip(todo.keys(), sigs))
            for _ in range(self.retries):
                # only a pass can be the flaky failure not showing; a different failure is kept
                again = [k for k in todo if self.memo[k] is None]
                if not again:
                    break
                sigs = self.evaluate([srcs[k] for k in again])
                self.queries += len(again)
                self.retried += len(again)
                self.memo.update((k, s) for k, s in zip(again, sigs) if s is not None)
        result = [self.memo[k] == self.signature for k in keys]
        for c, ok in zip(cands, result):
            if ok and (self.best is None or _size(c) < _size(self.best)):
                self.best = c
        if self.progress:
            self.progress(self)
        return result

    def first_failing(self, cands: list[Candidate]) -> Candidate | None:
        """The first of `cands` (in order) that fails, testing `parallel` at a time."""
        for i in range(0, len(cands), self.parallel):
            batch = cands[i : i + self.parallel]
            for c, ok in zip(batch, self.test(batch)):
                if ok:
                    return c
        return None


def _size(c: Candidate) -> tuple[int, int, int]:
    return (c.num_calls, len(c.inputs), c.input_bytes)


def cut_ancestry(r: Reducer, cand: Candidate) -> Candidate:
    """Find the shortest failing prefix of the graph (k-ary search, `parallel` cuts per round), then
    keep only the ancestry of the prefix's last node: for a single faulty op, that op's inputs."""
    nodes = [n for n in cand.calls() if tensor_spec(n) is not None]
    if len(nodes) < 2:
        return cand
    # the error names an ATen op (`aten.le`): that op alone, before any search
    named = [n for n in nodes if (op := _aten_op(n)) and re.search(rf"{re.escape(op)}(?![\w])", r.signature)]
    if named:
        alone = [_with_outputs(cand, [n]) for n in named[: r.parallel]]
        for c, ok in zip(alone, r.test(alone)):
            if ok:
                return c
    order = {n: i for i, n in enumerate(cand.calls())}

    def prefix(k: int) -> Candidate:
        # outputs: every value of the first k nodes still needed after them, plus the k-th node
        inside = set(cand.calls()[: order[nodes[k - 1]] + 1])
        live = [
            n
            for n in inside
            if tensor_spec(n) is not None and (any(u not in inside for u in n.users) or n is nodes[k - 1])
        ]
        return _with_outputs(cand, live)

    lo, hi = 0, len(nodes)  # prefix(hi) fails (it is the whole graph's work); prefix(lo) unknown
    while hi - lo > 1:
        step = max(1, (hi - lo) // (r.parallel + 1))
        points = list(range(lo + step, hi, step))[: r.parallel]
        results = r.test([prefix(k) for k in points])
        failing = [k for k, ok in zip(points, results) if ok]
        if failing:
            hi = failing[0]
            lo = max([k for k, ok in zip(points, results) if not ok and k < hi], default=lo)
        else:
            lo = points[-1]
    # the failing node alone, and the prefix ending at it, in one round
    alone = _with_outputs(cand, [nodes[hi - 1]])
    trials = [alone, prefix(hi)] if hi < len(nodes) else [alone]
    ok = r.test(trials)
    if ok[0]:
        return alone
    return trials[1] if len(ok) > 1 and ok[1] else cand


def _aten_op(node) -> str | None:
    """`aten.le` for a call of torch.ops.aten.le.Scalar (ATen graphs), else None."""

    if isinstance(node.target, OpOverload):
        return str(node.target.overloadpacket)
    return None


def _with_outputs(cand: Candidate, keep: list) -> Candidate:
    """A candidate returning `keep` (nodes of cand), with everything else dead removed."""
    import torch.fx as fx

    g = fx.Graph()
    env: dict = {}
    for n in cand.graph.nodes:
        if n.op == "output":
            continue
        env[n] = g.node_copy(n, env.__getitem__)
    g.output(tuple(env[n] for n in keep))
    return rebuild(Candidate(g, cand.inputs))


def ddmin_nodes(r: Reducer, cand: Candidate) -> Candidate:
    """Delta debugging over nodes: a removed node's consumers read a new input of its meta.

    First one bold guess (the usual single-op fault after the ancestry cut): keep only the nodes
    that produce outputs, every other node becomes an input."""
    producers = {o.name for o in cand.outputs()}
    rest = {x.name for x in cand.calls() if tensor_spec(x) is not None and x.name not in producers}
    if rest:
        guess = rebuild(cand, remove=rest)
        if guess.num_calls < cand.num_calls and r.test([guess])[0]:
            cand = guess
    n = 2
    while True:
        items = [x.name for x in cand.calls() if tensor_spec(x) is not None]
        if len(items) < 1:
            return cand
        n = min(n, len(items))
        chunks = [items[i * len(items) // n : (i + 1) * len(items) // n] for i in range(n)]
        # a graph left without calls cannot show a compiler's failure: not worth a query
        proposals = [p for p in (rebuild(cand, remove=set(ch)) for ch in chunks if ch) if p.num_calls]
        found = r.first_failing(proposals)
        if found is not None and found.num_calls < cand.num_calls:
            cand = found
            n = max(n - 1, 2)
            continue
        if n >= len(items):
            return cand
        n = min(2 * n, len(items))


def drop_outputs(r: Reducer, cand: Candidate) -> Candidate:
    """Keep one output at a time if that still fails, else drop outputs one by one."""
    outs = [o.name for o in cand.outputs()]
    if len(outs) < 2:
        return cand
    found = r.first_failing([rebuild(cand, outputs=[o]) for o in reversed(outs)])
    if found is not None:
        return found
    for o in list(outs):
        trial = rebuild(cand, outputs=[x for x in (o2.name for o2 in cand.outputs()) if x != o])
        if r.test([trial])[0]:
            cand = trial
    return cand


def shrink_shapes(r: Reducer, cand: Candidate) -> Candidate:
    """Every dimension 1 (one bold guess), else halve every dimension of every input while it
    still fails, then each input alone."""
    ones = with_inputs(cand, [_ones(s) for s in cand.inputs])
    # boldest first, in the same round: every dimension 1 and every input simplified
    boldest = with_inputs(cand, [_simplest(_ones(s)) for s in cand.inputs])
    trials = [c for c in (boldest, ones) if c.key() != cand.key()]
    for c, ok in zip(trials, r.test(trials) if trials else []):
        if ok:
            return c
    for _ in range(32):
        trial = with_inputs(cand, [halve(s) for s in cand.inputs])
        if trial.key() == cand.key() or not r.test([trial])[0]:
            break
        cand = trial
    for _ in range(32):
        trials = []
        for i, s in enumerate(cand.inputs):
            h = halve(s)
            if h != s:
                trials.append(with_inputs(cand, [*cand.inputs[:i], h, *cand.inputs[i + 1 :]]))
        found = r.first_failing(trials)
        if found is None:
            break
        cand = found
    return cand


def _ones(spec):
    if not spec.is_tensor or not spec.shape:
        return spec
    shape = tuple(1 if d > 1 else d for d in spec.shape)
    return replace(spec, shape=shape, stride=contiguous_stride(shape))


# the input simplifications, each tried alone by simplify_inputs (all at once by shrink_shapes)
_SIMPLIFY = (
    lambda s: replace(s, stride=contiguous_stride(s.shape)) if s.is_tensor else s,
    lambda s: replace(s, dtype="float32") if s.dtype in ("float16", "bfloat16", "float64") else s,
    lambda s: replace(s, requires_grad=False),
)


def _simplest(spec):
    for edit in _SIMPLIFY:
        spec = edit(spec)
    return spec


def simplify_inputs(r: Reducer, cand: Candidate) -> Candidate:
    """Contiguous strides, float32 for other float dtypes, no requires_grad: each where it still fails."""
    for edit in _SIMPLIFY:
        new = [edit(s) for s in cand.inputs]
        if new != cand.inputs:
            trial = with_inputs(cand, new)
            if r.test([trial])[0]:
                cand = trial
    return cand


# (name, pass): applied in this order, cheapest and most effective first
PASSES: tuple[tuple[str, Callable[[Reducer, Candidate], Candidate]], ...] = (
    ("ancestry cut", cut_ancestry),  # a graph's tail after the failing op never matters
    ("delta debugging", ddmin_nodes),  # remove node sets; consumers read fresh inputs
    ("drop outputs", drop_outputs),  # outputs the failure does not need (inputs follow by DCE)
    ("shrink shapes", shrink_shapes),  # halve dimensions while it fails
    ("simplify inputs", simplify_inputs),  # contiguous, float32, no grad
)


def reduce(r: Reducer, cand: Candidate) -> Candidate:
    """Run every pass in order; `r.best` always holds the smallest failing candidate so far."""
    r.best = cand
    for name, fn in PASSES:
        r.stage = name
        cand = fn(r, cand)
    r.best = cand  # each pass builds on the last; `best` mid-pass is only for an interrupted run
    return cand


class ProgressBar:
    """One line on stderr: queries, best size so far, the pass running (redrawn on a terminal)."""

    def __init__(self, stream=sys.stderr, original: int = 0):
        self.stream, self.original = stream, original
        self.t0 = time.perf_counter()
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.last_stage = None
        self.tick = Progress("minify", "step", stream=stream)  # the CLI's shared progress line

    def __call__(self, r: Reducer) -> None:
        best = r.best.num_calls if r.best is not None else self.original
        width = 20
        filled = width if not self.original else int(width * (1 - best / max(self.original, 1)))
        bar = "#" * filled + "." * (width - filled)
        line = (
            f"minify [{bar}] {r.queries} queries, best {best}/{self.original} nodes, "
            f"{r.stage}, {time.perf_counter() - self.t0:.1f}s"
        )
        if self.tick.tty:  # under the CLI on a terminal: drawn as every command's long waits are
            self.tick.step(f"{r.stage}, {r.queries} queries, best {best}/{self.original} nodes")
        elif self.tty:
            self.stream.write("\r" + line.ljust(100))
        elif r.stage != self.last_stage:
            self.stream.write(line + "\n")
        self.last_stage = r.stage
        self.stream.flush()

    def done(self) -> None:
        self.tick.close()
        if self.tty and not self.tick.tty:
            self.stream.write("\n")
