"""Free TCP ports on 127.0.0.1 for the servers the fixtures start."""

from __future__ import annotations

import socket
import threading

# Ports this process has handed out: the kernel may offer the same free port twice before
# the first server binds it, and two of our own servers must never race for one.
_given: set[int] = set()
_lock = threading.Lock()
# Well-known ports of servers that may run here (the system PostgreSQL and PgBouncer).
_AVOID = {5432, 6432}


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now and this process has not given out.

    Another program can still take it before the server binds; starting code retries with
    a fresh port when the bind fails.
    """
    with _lock:
        for _ in range(100):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            if port not in _given and port not in _AVOID:
                _given.add(port)
                return port
    raise RuntimeError("no free port on 127.0.0.1 after 100 tries")


def is_listening(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
