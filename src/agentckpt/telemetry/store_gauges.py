"""Gauges read from the database at each scrape: runs by kind and status, orphans.

``agentckpt metrics serve`` publishes them beside the serving process's own store
metrics, for a dashboard of the whole store (every process's commits show up in the
metrics of the process that made them; what is *stored* is the same for everyone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["StoreGauges"]

log = logging.getLogger("agentckpt.store")

RowsReader = Callable[[], list[dict[str, Any]]]


class StoreGauges:
    """A prometheus-client collector of ``agentckpt_runs`` and ``agentckpt_runs_lease_expired``.

    ``read`` returns rows of (kind, status, runs, lease_expired), e.g. the
    ``ops_metrics_runs`` query on a store. A scrape during an outage reports
    ``agentckpt_store_up 0`` instead of failing.
    """

    def __init__(self, read: RowsReader) -> None:
        self._read = read

    def collect(self) -> Iterator[Any]:
        """The gauges now (prometheus-client calls this on each scrape)."""
        from prometheus_client.core import GaugeMetricFamily

        up = GaugeMetricFamily("agentckpt_store_up", "1 if the store answered this scrape")
        runs = GaugeMetricFamily(
            "agentckpt_runs", "Runs stored, by kind and status", labels=["kind", "status"]
        )
        expired = GaugeMetricFamily(
            "agentckpt_runs_lease_expired",
            "Active runs whose lease expired (orphans a recovery worker would claim)",
            labels=["kind"],
        )
        try:
            rows = self._read()
        except Exception as exc:  # an outage must not turn a scrape into an HTTP 500
            log.warning("metrics: the store did not answer the scrape: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        by_kind: dict[str, int] = {}
        for row in rows:
            runs.add_metric([row["kind"], row["status"]], int(row["runs"]))
            by_kind[row["kind"]] = by_kind.get(row["kind"], 0) + int(row["lease_expired"] or 0)
        for kind, count in sorted(by_kind.items()):
            expired.add_metric([kind], count)
        yield up
        yield runs
        yield expired
