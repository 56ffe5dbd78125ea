"""Whether a call changes its own arguments, which makes doctor's replay of it time another call.

A generation step appends to the KV cache it is given (`cache.layers[i].keys = torch.cat(...)`): each
replay of that step runs on a longer cache than the last, so thousands of replays time caches
thousands of tokens long that the script never had (T5 `generate()` with a compiled forward was
timed "slower 0.85x" on such caches, drifting as they grew). Such a call is not re-timed; its
times come from the script's own calls.

`fingerprint` walks the arguments (containers, and the attributes of plain objects such as a cache,
a few levels deep) and notes every tensor's place, identity, shape and version counter; `changed`
compares two fingerprints. Only a change of shape or of which tensors are there counts: an update in
place, or a tensor replaced by one of the same shape (a static cache), leaves the next call timing
the same work.
"""

from __future__ import annotations

# how deep the walk goes into nested containers and objects' attributes (a HF cache: cache ->
# layers -> layer -> keys is 3); deeper structures are not followed
MAX_DEPTH = 5
# at most this many objects are visited: a call's arguments that hold a whole model graph are not
# walked to the end
MAX_OBJECTS = 2000


def param_names(fn, n: int) -> list[str]:
    """The names of `fn`'s first n positional parameters (a module's are its forward's), as far as
    its signature gives them; `args[i]` where it does not."""
    import inspect

    try:
        params = list(inspect.signature(getattr(fn, "forward", fn)).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [named[i] if i < len(named) else f"args[{i}]" for i in range(n)]


def fingerprint(args: tuple, kwargs: dict, names: list[str] | None = None) -> dict:
    """`{path: (id, shape, version)}` of every tensor reachable from the arguments (positional ones
    named by `names`, else `args[i]`)."""
    import torch

    out: dict = {}
    seen: set[int] = set()

    def walk(obj, path: str, depth: int) -> None:
        if depth > MAX_DEPTH or len(seen) >= MAX_OBJECTS or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            # a tensor made under inference_mode has no version counter (reading it raises)
            out[path] = (id(obj), tuple(obj.shape), None if obj.is_inference() else obj._version)
        elif isinstance(obj, (list, tuple)):
            for i, x in enumerate(obj):
                walk(x, f"{path}[{i}]", depth + 1)
        elif isinstance(obj, dict):
            for k, x in list(obj.items()):
                walk(x, f"{path}[{k!r}]", depth + 1)
        elif isinstance(obj, torch.nn.Module) or not hasattr(obj, "__dict__") or isinstance(obj, type):
            return  # a module's parameters are the model's, not the call's; no attributes to walk
        else:
            for k, x in list(vars(obj).items()):
                walk(x, f"{path}.{k}", depth + 1)

    for i, a in enumerate(args):
        walk(a, names[i] if names and i < len(names) else f"args[{i}]", 0)
    for k, a in kwargs.items():
        walk(a, k, 0)
    return out


def changed(before: dict, after: dict) -> str | None:
    """The first argument tensor a call reshaped, added or dropped, in words; None when every tensor
    reachable from the arguments has the shape it had."""
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if b is None:
            return f"`{path}` appeared"
        if a is None:
            return f"`{path}` went away"
        if b[1] != a[1]:
            return f"`{path}` went from shape {list(b[1])} to {list(a[1])}"
    return None
