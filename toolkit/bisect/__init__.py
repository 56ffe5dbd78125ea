"""`fxlens bisect`: the backend ladder, counted child runs, the accuracy/crash check, graph, kernel
and fusion-decision search, and the handover to torch's CompilerBisector for inductor.

Uses `fxlens.capture` and `fxlens.trace`; never imports `fxlens.minify` or `fxlens.doctor`.
"""
