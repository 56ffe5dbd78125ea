"""`fxlens fix`: every fix the findings name, tried in a re-run and measured (fxlens.fix.command)."""
