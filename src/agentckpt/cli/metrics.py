"""``agentckpt metrics serve``: a Prometheus endpoint for a store, for users without a
collector (the ``metrics`` extra: prometheus-client)."""

from __future__ import annotations

import argparse
import sys
import threading

from agentckpt.cli.command import Subparsers, port


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``metrics serve``."""
    metrics = sub.add_parser("metrics", help="serve the store's metrics to Prometheus")
    metrics_sub = metrics.add_subparsers(dest="sub_command", required=True, metavar="SUBCOMMAND")
    serve = metrics_sub.add_parser(
        "serve",
        parents=[common],
        help="serve /metrics over HTTP until interrupted",
        description="Serves http://HOST:PORT/metrics in Prometheus' text format: runs by "
        "kind and status and expired leases, read from the database at each scrape, and "
        "the serving process's own store metrics (its connection pool). Applications "
        "publish their commits' metrics with agentckpt.telemetry.prometheus.",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=port, default=9464, help="port to listen on (default 9464; 0: any free one)"
    )
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    from agentckpt.cli.target import open_store, store_url
    from agentckpt.errors import ConfigurationError
    from agentckpt.ops import queries
    from agentckpt.telemetry import Telemetry
    from agentckpt.telemetry.prometheus import PrometheusMetrics, serve_metrics
    from agentckpt.telemetry.store_gauges import StoreGauges

    url = store_url(args)
    store = open_store(url)
    try:
        gauges = StoreGauges(lambda: store.backend.read(queries.METRICS_RUNS, {}))
        prometheus = PrometheusMetrics(extra=(gauges,))
        Telemetry(prometheus=prometheus, use_global=False).watch_pool(store.backend)
        try:
            server = serve_metrics(prometheus, port=args.port, host=args.host)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
            ) from None
        print(f"serving http://{args.host}:{server.port}/metrics", flush=True)
        try:
            threading.Event().wait()
        finally:
            server.close()
            print("stopped", file=sys.stderr)
    finally:
        store.close()
    return 0
