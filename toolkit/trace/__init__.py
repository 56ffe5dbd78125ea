"""Reading torch's structured trace (TORCH_TRACE): the log reader, the records, the Session model.

The bottom layer of the toolkit: it imports nothing of fxlens but `fxlens.errors` and `fxlens.config`,
so the report, every command and the TUI can read sessions without pulling in anything else.
"""
