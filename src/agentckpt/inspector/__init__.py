"""The read-only web inspector: ``agentckpt inspect``, or :func:`make_server` from Python.

Pages: the runs, paged, searched and filtered, with status, recovery flags, size, tokens
and cost; a run of any kind (LangGraph thread, Agents SDK session, conversation, long
run) with what recovery would do now, charts of its storage and a paged timeline of its
messages and tool calls; the state at any kept step and the command to fork from it;
the diff between two steps. Everything is rendered on the server (Jinja2 templates,
autoescaped; the ``inspector`` extra) with inline SVG charts; the pages hold no script
and load nothing from the network.

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
