"""`fxlens minify`: capture of the failing graph, the failure check, graph passes, reduction on a
worker pool, the AOT (ATen) level, verification in fresh interpreters, and the reproducer writer.

Uses `fxlens.capture` and `fxlens.trace`; never imports `fxlens.bisect` or `fxlens.doctor`.
"""
