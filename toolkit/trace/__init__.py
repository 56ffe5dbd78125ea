"""Reading torch's structured trace (TORCH_TRACE): the log reader, the records, the Session model.

The bottom layer of the toolkit: it imports nothing of fxlens but `fxlens.errors` and `fxlens.config`,
so the report, every command and the TUI can read sessions without pulling in anything else.
"""

# `hook(items, total) -> items`, wrapping the (log, model, why) stream of fxlens.trace.parallel to
# report progress: installed by the CLI (fxlens.live.progress, a layer above this one) without
# importing the readers; None: nothing reported
progress_hook = None
