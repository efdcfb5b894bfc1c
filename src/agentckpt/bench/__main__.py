"""``python -m agentckpt.bench``."""

from __future__ import annotations

from agentckpt.bench.cli import main

raise SystemExit(main())
