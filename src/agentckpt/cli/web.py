"""``agentckpt inspect``: serve the read-only web inspector on this machine."""

from __future__ import annotations

import argparse
import os
from typing import Any

from agentckpt.cli.command import CommandLineError, Subparsers, port

ENV_TOKEN = "AGENTCKPT_INSPECT_TOKEN"


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``inspect``."""
    cmd = sub.add_parser(
        "inspect",
        parents=[common],
        help="serve a read-only web inspector (127.0.0.1 only, unless given a token)",
        description="Runs and conversations, their timelines of messages and tool calls, "
        "the state at any step, diffs between steps and storage growth, in a browser. "
        "Read-only; no asset comes from the network. It binds to 127.0.0.1; another "
        f"address needs --token (or ${ENV_TOKEN}), which every request must then carry.",
    )
    cmd.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    cmd.add_argument("--port", type=port, default=8765, help="port (8765; 0 picks a free one)")
    cmd.add_argument(
        "--token", help=f"access token that requests must carry (default: ${ENV_TOKEN})"
    )
    cmd.set_defaults(func=run)


def store_label(url: str) -> str:
    """How the pages name the store: a SQLite file, or a server and database (no password)."""
    from urllib.parse import urlsplit

    from agentckpt._backends.factory import parse_url
    from agentckpt.cli.target import sqlite_path

    path = sqlite_path(url)
    if path is not None:
        return f"sqlite {path.resolve()}{_tenant_label(parse_url(url))}"
    target = parse_url(url)
    parts = urlsplit(target.location)
    host = parts.hostname or "localhost"
    where = f"{host}:{parts.port}" if parts.port else host
    schema = target.settings.get("schema", "agentckpt")
    return f"postgresql {where}{parts.path} schema {schema}{_tenant_label(target)}"


def _tenant_label(target: Any) -> str:
    tenant = target.settings.get("tenant")
    return f" · tenant {tenant}" if tenant else ""


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.inspector import is_loopback, make_server

    token = args.token or os.environ.get(ENV_TOKEN) or None
    if not is_loopback(args.host) and not token:
        raise CommandLineError(
            f"refusing to serve on {args.host} without an access token: pass --token "
            f"SECRET (or set {ENV_TOKEN}), or keep the default --host 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise CommandLineError("the access token must be at least 16 characters long")
    store = open_store(store_url(args))
    try:
        server = make_server(
            store, host=args.host, port=args.port, token=token, label=store_label(store_url(args))
        )
    except OSError as exc:
        store.close()
        raise CommandLineError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror}"
        ) from None
    link = server.url + (f"?token={token}" if token else "")
    print(f"agentckpt inspector: {link} (read-only; Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        store.close()
    return 0
