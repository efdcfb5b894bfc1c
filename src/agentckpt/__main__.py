"""``python -m agentckpt`` runs the command line."""

from __future__ import annotations

from agentckpt.cli import main

raise SystemExit(main())
