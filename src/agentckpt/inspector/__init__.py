"""The read-only web inspector: ``agentckpt inspect``, or :func:`make_server` from Python.

Pages: the runs and conversations with status and size; a run's timeline of steps with
their messages and tool calls, and charts of its storage; the state at any kept step;
the diff between two steps. Everything is rendered on the server with inline SVG
charts; the pages hold no script and load nothing from the network.

Example::

    from agentckpt import Store
    from agentckpt.inspector import make_server

    store = Store.connect("sqlite:///agent.db", migrate=False)
    server = make_server(store, port=8765)   # 127.0.0.1 only
    server.serve_forever()
"""

from __future__ import annotations

from agentckpt.inspector.server import InspectorServer, is_loopback, make_server

__all__ = ["InspectorServer", "is_loopback", "make_server"]
