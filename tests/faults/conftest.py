"""Fault tests: real `fxlens` processes against tiny scripts and edited traces."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # trace_edits, proc_helpers
