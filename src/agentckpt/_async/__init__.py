"""Async sources; the sync twins in ``agentckpt._sync`` are generated from them."""
