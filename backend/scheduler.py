"""Fusion scheduler: groups realized nodes into kernels, recording every decision with its reason.

Rules, tried in order for each realized node B against earlier kernels (latest first):
  - same (numel, rnumel): pointwise chains, and reductions over the same rows (layernorm, softmax);
  - a pointwise node over a reduction's rows (numel == xnumel): epilogue;
  - a pointwise node over a reduction's full domain: prologue/epilogue in the row loop;
  - a reduction after a pointwise kernel over its full domain: prologue (the kernel becomes a reduction).
A candidate must share a buffer with B (or be the kernel just before B, with the same domain); the scan stops at the first item B depends on (moving B
before it "would create a cycle"); a trial codegen must succeed (same-index reads of values the
kernel computes; in a looped reduction, a pointwise value an earlier loop computed is recomputed in
the later loop that needs it, and the decision says so). FXLENS_FUSION_LIMIT=N applies only the first
N decisions.
"""

from __future__ import annotations

from fxlens.backend.codegen import Kernel, SchedNode, generate, persistent
from fxlens.backend.ir import Reduction, numel
from fxlens.backend.items import Budget, Extern
from fxlens.backend.kernel_ctx import Incompatible


def new_kernel(sn: SchedNode) -> Kernel:
    if isinstance(sn.value, Reduction):
        r = sn.value
        return Kernel([sn], r.xnumel, r.rnumel, tuple(r.full), tuple(r.rdims))
    return Kernel([sn], sn.domain[0])


def _alone(nodes) -> bool:
    """Nodes that keep a kernel to themselves (indirect stores over their own domain, lower/index.py)."""
    return any(getattr(n, "alone", False) for n in nodes)


def _merged(k: Kernel, sn: SchedNode) -> Kernel | None:
    """The kernel `k` with `sn` appended, if their iteration domains are compatible."""
    n = numel(sn.out.shape)
    if _alone([sn, *k.nodes]):
        return None
    if isinstance(sn.value, Reduction):
        r = sn.value
        if k.is_reduction:
            return Kernel(k.nodes + [sn], k.xnumel, k.rnumel, k.full, k.rdims) if (
                (r.xnumel, r.rnumel) == (k.xnumel, k.rnumel)) else None  # fmt: skip
        if all(numel(o.out.shape) in (numel(r.full), r.xnumel) for o in k.nodes):
            return Kernel(k.nodes + [sn], r.xnumel, r.rnumel, tuple(r.full), tuple(r.rdims))
        return None
    if not k.is_reduction:
        return Kernel(k.nodes + [sn], k.xnumel) if n == k.xnumel else None
    if n in (k.xnumel, numel(k.full)):  # over its rows, or its full domain (in any shape: row_index)
        return Kernel(k.nodes + [sn], k.xnumel, k.rnumel, k.full, k.rdims)
    return None


def _recomputes(src, k: Kernel) -> str:
    """What joining the kernel makes it compute twice: pointwise values a later loop needs (looped
    reductions). The kernel keeps the set, so each decision names only what it added."""
    names = sorted(src.recomputed - k.recomputed)
    k.recomputed = set(src.recomputed)
    return f"; recomputes {', '.join(names)} in a later loop over the row" if names else ""


def _reads(sn: SchedNode, rmax: int) -> set[str]:
    src = generate(new_kernel(sn), "probe", persistent(new_kernel(sn), rmax), None)
    return {b.name for b in src.params} - ({sn.out.base.name} if not sn.mutation else set())


def schedule(items: list, fusion: bool, budget: Budget, rmax: int) -> list:
    """Group `items` (SchedNodes and Externs in order) into Kernels and Externs, in order."""
    out: list = []
    produced: dict[int, set[str]] = {}  # id(item) -> root names it writes
    reads: dict[int, set[str]] = {}
    for it in items:
        if isinstance(it, Extern):
            out.append(it)
            produced[id(it)] = {b.name for b in it.outs if b is not None}
            reads[id(it)] = it.reads
            continue
        sn = it
        r = _reads(sn, rmax)
        writes = {sn.out.base.name}
        placed = False
        if fusion:
            placed = _try_fuse(out, sn, r, writes, produced, reads, budget, rmax)
        if not placed:
            k = new_kernel(sn)
            out.append(k)
            produced[id(k)] = set(writes)
            reads[id(k)] = set(r)
    return _merge_adjacent(out, budget, rmax) if fusion else out


def _merge_adjacent(out: list, budget: Budget, rmax: int) -> list:
    """A kernel over a reduction's rows (or its full domain) right before that reduction kernel joins it."""
    res: list = []
    for it in out:
        prev = res[-1] if res else None
        if (isinstance(it, Kernel) and isinstance(prev, Kernel) and it.is_reduction and not prev.is_reduction
                and not _alone(prev.nodes + it.nodes)):  # fmt: skip
            full = numel(it.full or ())
            if all(numel(n.out.shape) in (it.xnumel, full) for n in prev.nodes):
                cand = Kernel(prev.nodes + it.nodes, it.xnumel, it.rnumel, it.full, it.rdims)
                if not budget.allowed():
                    budget.record(False, prev, it.nodes[0].name, "not fused: beyond FXLENS_FUSION_LIMIT")
                else:
                    try:
                        src = generate(cand, "probe", persistent(cand, rmax), None)
                    except Incompatible as e:
                        budget.record(False, prev, it.nodes[0].name, f"not fused: {e}")
                    else:
                        prev.recomputed |= it.recomputed  # already said at `it`'s own decisions
                        budget.record(
                            True,
                            prev,
                            it.nodes[0].name,
                            f"fused: prologue over the rows of ({it.xnumel}, {it.rnumel})"
                            + _recomputes(src, prev),
                        )
                        prev.nodes, prev.xnumel, prev.rnumel, prev.full, prev.rdims = (
                            cand.nodes,
                            cand.xnumel,
                            cand.rnumel,
                            cand.full,
                            cand.rdims,
                        )
                        it.merged_into = prev
                        continue
        res.append(it)
    return res


def _try_fuse(out, sn, r, writes, produced, reads, budget: Budget, rmax: int) -> bool:
    mutated = writes if sn.mutation else set()
    for j in range(len(out) - 1, -1, -1):
        it = out[j]
        if isinstance(it, Kernel):
            cand = _merged(it, sn)
            shared = r & (produced[id(it)] | reads[id(it)])
            adjacent = (
                j == len(out) - 1
                and cand is not None
                and (cand.xnumel, cand.rnumel) == (it.xnumel, it.rnumel)
            )
            if cand is not None and (shared or adjacent):
                if not budget.allowed():
                    budget.record(False, it, sn.name, "not fused: beyond FXLENS_FUSION_LIMIT")
                    return False
                try:
                    src = generate(cand, "probe", persistent(cand, rmax), None)
                except Incompatible as e:
                    budget.record(False, it, sn.name, f"not fused: {e}")
                    return False
                it.nodes, it.xnumel, it.rnumel, it.full, it.rdims = (
                    cand.nodes,
                    cand.xnumel,
                    cand.rnumel,
                    cand.full,
                    cand.rdims,
                )
                produced[id(it)] |= writes
                reads[id(it)] |= r
                kind = "reduction rows" if cand.is_reduction else "pointwise"
                why = f"shares {sorted(shared)[0]}" if shared else "adjacent, same domain"
                budget.record(
                    True,
                    it,
                    sn.name,
                    f"fused: same (numel, rnumel) = ({cand.xnumel}, {cand.rnumel}), {kind}, {why}"
                    + _recomputes(src, it),
                )
                return True
        if (r & produced[id(it)]) or (mutated & reads[id(it)]):
            for it2 in reversed(out[:j]):
                if (
                    isinstance(it2, Kernel)
                    and _merged(it2, sn) is not None
                    and r & (produced[id(it2)] | reads[id(it2)])
                ):
                    name = getattr(it, "name", "") or type(it).__name__
                    budget.record(False, it2, sn.name, f"not fused: would create a cycle (through {name})")
                    break
            return False
    return False
