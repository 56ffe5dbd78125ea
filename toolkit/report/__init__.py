"""The report: recompile root causes, the report dict (the JSON contract), text output, and
the `fxlens report` command. Reads `fxlens.trace` only.
"""
