"""agentckpt's metrics as Prometheus metrics, and an HTTP endpoint to scrape them.

For an application without an OpenTelemetry collector: give its :class:`Telemetry` a
:class:`PrometheusMetrics` and serve it (``metrics`` extra, ``prometheus-client``)::

    prometheus = PrometheusMetrics()
    store = Store.connect(url, telemetry=Telemetry(prometheus=prometheus))
    server = serve_metrics(prometheus, port=9464)   # GET http://127.0.0.1:9464/metrics

Every metric of :data:`~agentckpt.telemetry.catalogue.METRICS` is published with dots as
underscores (``db.system`` becomes the label ``db_system``); counters get ``_total``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentckpt.errors import ConfigurationError
from agentckpt.telemetry.catalogue import METRICS, MetricSpec

if TYPE_CHECKING:
    from agentckpt.telemetry.telemetry import Telemetry

__all__ = ["MetricsServer", "PrometheusMetrics", "serve_metrics"]


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ConfigurationError(
            "the Prometheus endpoint needs prometheus-client: pip install 'agentckpt[metrics]'"
        ) from None
    return prometheus_client


def _label(attribute: str) -> str:
    return attribute.replace(".", "_")


class PrometheusMetrics:
    """Prometheus counters and histograms for every agentckpt metric, in one registry.

    ``registry`` defaults to a new ``CollectorRegistry`` of this object's own (not
    prometheus-client's global one), so two stores or tests never share counts.
    ``extra`` collectors (objects with ``collect()``) are registered beside them.
    """

    def __init__(self, registry: Any = None, *, extra: tuple[Any, ...] = ()) -> None:
        client = _client()
        self.registry = registry if registry is not None else client.CollectorRegistry()
        self._telemetry: Telemetry | None = None
        self._metrics: dict[str, Any] = {}
        for spec in METRICS:
            labels = [_label(a) for a in spec.attributes]
            if spec.kind == "histogram":
                self._metrics[spec.name] = client.Histogram(
                    spec.prometheus_name,
                    spec.description,
                    labels,
                    registry=self.registry,
                    buckets=(*spec.buckets, float("inf")),
                )
        self.registry.register(_Observed(self))
        for collector in extra:
            self.registry.register(collector)

    def attach(self, telemetry: Telemetry) -> None:
        """Read the observable metrics (pool stats) of ``telemetry``."""
        self._telemetry = telemetry

    def record(self, name: str, value: float, attributes: dict[str, Any]) -> None:
        """Observe a histogram value."""
        self._metrics[name].labels(*(str(v) for v in attributes.values())).observe(value)

    def observed(self, spec: MetricSpec) -> list[tuple[dict[str, Any], float]]:
        """The points of a counter now (the telemetry keeps the totals)."""
        return self._telemetry.observe(spec) if self._telemetry is not None else []


class _Observed:
    """The counters, read from the telemetry's totals and the pools at scrape time."""

    def __init__(self, metrics: PrometheusMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        for spec in METRICS:
            if spec.kind == "histogram":
                continue
            family = CounterMetricFamily(
                spec.prometheus_name, spec.description, labels=[_label(a) for a in spec.attributes]
            )
            for attributes, value in self._metrics.observed(spec):
                family.add_metric([str(attributes[a]) for a in spec.attributes], value)
            yield family


class MetricsServer:
    """A running ``/metrics`` endpoint; :meth:`close` stops it."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The port it listens on (useful with ``port=0``)."""
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving and wait for the server thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def serve_metrics(
    metrics: PrometheusMetrics, *, port: int = 9464, host: str = "127.0.0.1"
) -> MetricsServer:
    """Serve ``metrics`` at ``http://host:port/metrics`` from a daemon thread."""
    client = _client()
    server, thread = client.start_http_server(port, addr=host, registry=metrics.registry)
    return MetricsServer(server, thread)
