"""Raises before torch.compile is ever called."""

raise ValueError("bad configuration file")
