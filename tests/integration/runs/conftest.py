"""Fixtures: the run loop on SQLite and PostgreSQL, sync and async.

Test bodies drive both ``AgentRun`` and ``AsyncAgentRun`` through :class:`Runs`. Step
functions are written once, synchronously; for the async loop they run in a worker
thread while the event loop stays free, and their context calls (``ctx.effect``,
``ctx.load``, ``ctx.emit``) are sent back to the loop, where the async API does the work.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentckpt import AsyncStore, Store
from agentckpt.runs import (
    AgentRun,
    AsyncAgentRun,
    AsyncAuditLog,
    AsyncRecoveryWorker,
    AuditLog,
    RecoveryWorker,
    gc_blobs,
    gc_blobs_async,
)
from agentckpt.runs.pipeline_async import DEFAULT_AHEAD, DEFAULT_AHEAD_HELD
from tests.support.dbsql import run_sql

Step = Callable[[Any], Any]


class ThreadContext:
    """A step context for a sync step function running beside the async loop."""

    def __init__(self, inner: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._inner = inner
        self._loop = loop
        self.run_id = inner.run_id
        self.step = inner.step
        self.parent_step = inner.parent_step
        self.attempt = inner.attempt
        self.state = inner.state

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def idempotency_key(self, key: str) -> str:
        return str(self._inner.idempotency_key(key))

    def effect(self, key: str, action: Callable[[str], Any]) -> Any:
        async def run_action(idempotency_key: str) -> Any:
            return action(idempotency_key)

        return self._call(self._inner.effect(key, run_action))

    def load(self, value: Any) -> Any:
        return self._call(self._inner.load(value))

    def emit(self, kind: str, data: Any = None) -> bool:
        async def emit() -> bool:
            return bool(self._inner.emit(kind, data))

        return bool(self._call(emit()))


def to_async(step: Step) -> Callable[[Any], Any]:
    """An async step function running the sync ``step`` in a worker thread."""

    async def run(ctx: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(step, ThreadContext(ctx, loop))

    return run


class RunHandle:
    """One ``AgentRun`` or ``AsyncAgentRun``, driven synchronously."""

    def __init__(self, runs: Runs, inner: Any) -> None:
        self._runs = runs
        self.inner = inner

    def _do(self, value: Any) -> Any:
        return self._runs.do(value)

    def run(self, step: Step, **kwargs: Any) -> Any:
        return self._do(self.inner.run(self._runs.step_fn(step), **kwargs))

    def steps(self, step: Step, **kwargs: Any) -> Iterator[Any]:
        produced = self.inner.steps(self._runs.step_fn(step), **kwargs)
        if self._runs.flavor == "sync":
            yield from produced
            return
        while True:
            try:
                yield self._runs.do(produced.__anext__())
            except StopAsyncIteration:
                return

    def open(self) -> None:
        self._do(self.inner.open())

    def close(self) -> None:
        self._do(self.inner.close())

    def load(self, value: Any) -> Any:
        return self._do(self.inner.load(value))

    def __enter__(self) -> RunHandle:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Runs:
    """Runs of one flavor (sync or async) on one database; ``overlap``: the async loop
    with ``overlap=True`` (the next steps computed while the ones before commit), whose
    window (at most ``ahead`` steps computed and not yet durable) is its default."""

    def __init__(self, flavor: str, url: str, *, overlap: bool = False) -> None:
        self.flavor = flavor
        self.overlap = overlap
        self.url = url
        self.ahead = DEFAULT_AHEAD_HELD if url.startswith("sqlite") else DEFAULT_AHEAD
        self.loop = asyncio.new_event_loop()
        if flavor == "sync":
            self.store: Any = Store.connect(url)
        else:
            self.store = self.loop.run_until_complete(AsyncStore.connect(url))
        # A separate sync connection for checking what is stored.
        self.check = Store.connect(url)
        self._closers: list[Callable[[], Any]] = []

    def do(self, value: Any) -> Any:
        """Await ``value`` on the private loop when it is awaitable (async flavor)."""
        if self.flavor == "async" and asyncio.iscoroutine(value):
            if self.loop.is_running():  # called from a worker thread beside the loop
                return asyncio.run_coroutine_threadsafe(value, self.loop).result()
            return self.loop.run_until_complete(value)
        return value

    def step_fn(self, step: Step) -> Any:
        return step if self.flavor == "sync" else to_async(step)

    def sleeper(self, record: list[float]) -> Any:
        """A sleep function that records delays instead of sleeping."""
        if self.flavor == "sync":
            return record.append

        async def sleep(delay: float) -> None:
            record.append(delay)

        return sleep

    def agent_run(self, run_id: Any = None, *, store: Any = None, **options: Any) -> RunHandle:
        cls = AgentRun if self.flavor == "sync" else AsyncAgentRun
        if self.overlap:
            options.setdefault("overlap", True)
        return RunHandle(self, cls(store or self.store, run_id, **options))

    def audit_log(self, store: Any = None, *, start: bool = True, **options: Any) -> Any:
        cls = AuditLog if self.flavor == "sync" else AsyncAuditLog
        log = cls(store or self.store, **options)
        if start:
            if self.flavor == "sync":
                log.start()
            else:

                async def begin() -> None:
                    log.start()

                self.loop.run_until_complete(begin())
        self._closers.append(lambda: self.do(log.close()))
        return log

    def recovery_worker(self, **options: Any) -> Any:
        cls = RecoveryWorker if self.flavor == "sync" else AsyncRecoveryWorker
        worker = cls(self.store, **options)
        if self.flavor == "async":
            plain = worker.register

            def register(agent_id: str, factory: Callable[[Any], Any]) -> None:
                async def resume(run: Any) -> Any:
                    # The sync factory drives the run from a worker thread.
                    return await asyncio.to_thread(factory, RunHandle(self, run))

                plain(agent_id, resume)

            worker.register = register
        else:
            plain_sync = worker.register

            def register_sync(agent_id: str, factory: Callable[[Any], Any]) -> None:
                plain_sync(agent_id, lambda run: factory(RunHandle(self, run)))

            worker.register = register_sync
        return worker

    def gc(self, blobs: Any = None, **options: Any) -> Any:
        """Run blob garbage collection with this flavor's function."""
        fn = gc_blobs if self.flavor == "sync" else gc_blobs_async
        return self.do(fn(self.store, blobs, **options))

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run ``query`` on a connection of its own. Async flavors run it in a thread
        while the private loop runs: between two driven steps an overlapped run has a
        commit in flight (on Citus a transaction that holds the run's row across round
        trips), and a statement waiting for that row on this thread, with the loop
        stopped, would wait for ever."""
        if self.flavor == "async" and not self.loop.is_running():
            rows: list[tuple[Any, ...]] = self.loop.run_until_complete(
                asyncio.to_thread(run_sql, self.url, query, *params)
            )
            return rows
        return run_sql(self.url, query, *params)

    def close(self) -> None:
        for closer in reversed(self._closers):
            closer()
        self.do(self.store.close())
        self.check.close()
        self.loop.close()


@pytest.fixture(params=["sync", "async", "overlap"])
def flavor(request: pytest.FixtureRequest) -> str:
    """Which run loop: ``AgentRun`` (sync), ``AsyncAgentRun``, or ``AsyncAgentRun`` with
    ``overlap=True`` (every run test holds for the overlapped loop too)."""
    return str(request.param)


@pytest.fixture
def runs(flavor: str, url: str) -> Iterator[Runs]:
    """Run loops of one flavor on a fresh SQLite or PostgreSQL database."""
    made = Runs("async" if flavor == "overlap" else flavor, url, overlap=flavor == "overlap")
    yield made
    made.close()


# -- blob stores ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """An S3-compatible server (moto) on 127.0.0.1, for the whole session."""
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_client(endpoint: str) -> Any:
    """A boto3 client for the test server (dummy credentials, no network beyond it)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def s3_store(s3_endpoint: str) -> Any:
    """An :class:`S3BlobStore` on a fresh bucket, over HTTP."""
    from agentckpt.runs import S3BlobStore

    client = s3_client(s3_endpoint)
    bucket = f"blobs-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    return S3BlobStore(bucket, prefix="agent/", client=client)


@pytest.fixture
def local_store(tmp_path: Path) -> Any:
    """A :class:`LocalBlobStore` in a fresh directory."""
    from agentckpt.runs import LocalBlobStore

    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture(params=["local", "s3"])
def blob_store(request: pytest.FixtureRequest) -> Any:
    """Each blob store outside the database."""
    return request.getfixturevalue(f"{request.param}_store")
