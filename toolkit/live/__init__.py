"""Live view of a run: follow a TORCH_TRACE as it grows (`tail`, `state`), show it on the terminal
while the script runs (`terminal`, `status`), and report fxlens's own long waits (`progress`)."""
