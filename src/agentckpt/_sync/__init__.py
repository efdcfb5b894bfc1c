"""Generated sync twins of ``agentckpt._async`` (see scripts/unasync.py)."""
