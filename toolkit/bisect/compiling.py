"""How bisect's wrapper compiles one graph with one stage (split out of `fxlens.bisect.backend`).

The stage's backend gets the graph as torch.compile would give it: inductor with the call's own
`mode`/`options` (as torch's inductor wrapper applies them) and with the config change torch's
CompilerBisector is testing; the script's own backend with the keywords torch passes a callable.
"""

from __future__ import annotations

import os

from fxlens.backend.stages import stage


def compile_stage(backend, use: str, gm, example_inputs, options: dict | None = None):
    """`backend(gm, example_inputs)`; for a stage that takes torch.compile's options (inductor), the
    call's own `mode`/`options` (as torch.compile's inductor wrapper applies them), the config
    change CompilerBisector is testing and the stage's own switches; other stages of the ladders
    take no options, as torch's `eager`/`aot_eager` ignore mode."""
    options = options or {}
    row = stage(use)
    changes = _bisector_config_change(use) or {}
    if row and row.options and (changes or options or row.inductor_config):
        from fxlens.backend.torch_compat import compile_fx, list_mode_options

        patches = dict(list_mode_options(options.get("mode"), None)) if options.get("mode") else {}
        patches.update(options.get("options") or {})
        patches.update(changes)
        patches.update(row.inductor_config)
        return compile_fx(gm, example_inputs, config_patches=patches)
    if row is None and options:  # the script's own backend gets what torch gives it
        return backend(gm, example_inputs, **options)
    return backend(gm, example_inputs)


def _bisector_config_change(use: str) -> dict | None:
    """The inductor config change torch's CompilerBisector is testing in this run, if any.

    torch applies it only where `torch.compile(backend="inductor")` builds its wrapper; this
    wrapper calls the registered `inductor` backend instead, so it applies the change itself (else
    the bisector's config steps, e.g. `fallback_random`, would test nothing).
    """
    row = stage(use)
    if not (row and row.torch_bisectable) or not os.environ.get("TORCH_BISECT_BACKEND"):
        return None
    from fxlens.backend.torch_compat import CompilerBisector

    if not CompilerBisector.bisection_enabled:
        return None
    return CompilerBisector.get_config_change("inductor") or None
