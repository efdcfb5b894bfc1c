"""The demo: a deterministic agent is killed with SIGKILL mid-run and resumed exactly."""
