"""Nested compile regions in a captured graph: their bodies inlined where they are called.

A Dynamo graph with a `torch.compiler.nested_compile_region` calls the region's body, a submodule
(`self.subgraph_0`), through `torch.ops.higher_order.invoke_subgraph`. The captured graph is saved
as code of one module, so the body would be lost (re-tracing it failed with "'CapturedGraph' object
has no attribute 'subgraph_0'"). Each call is replaced by a copy of the body's nodes, so the saved
graph, every candidate and the reproducer hold the region's ops; the backend compiles them as part
of the graph instead of as a region. A failure that needs the region itself (its reuse across
calls) then does not reproduce alone, and minify says so.
"""

from __future__ import annotations


def inline_regions(gm) -> int:
    """Inline every invoke_subgraph call of `gm` (in place, recompiled); returns how many."""
    import operator

    import torch

    hop = getattr(torch.ops.higher_order, "invoke_subgraph", None)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and hop is not None and n.target is hop]
    for node in calls:
        body_attr, operands = node.args[0], node.args[2:]
        body = getattr(gm, body_attr.target) if body_attr.op == "get_attr" else None
        if not isinstance(body, torch.fx.GraphModule):
            continue
        placeholders = [p for p in body.graph.nodes if p.op == "placeholder"]
        val_map = dict(zip(placeholders, operands, strict=False))
        with gm.graph.inserting_before(node):
            outs = gm.graph.graph_copy(body.graph, val_map)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        for user in list(node.users):
            if user.op == "call_function" and user.target is operator.getitem:
                user.replace_all_uses_with(outs[user.args[1]])
                gm.graph.erase_node(user)
        if not node.users:
            gm.graph.erase_node(node)
            if not body_attr.users:
                gm.graph.erase_node(body_attr)
    gm.graph.lint()
    gm.recompile()
    return len(calls)
