"""StepWrite.positional(): the statements' parameters in the order the PostgreSQL
backend's ``$n`` placeholders number them, the same values as params() by name."""

from __future__ import annotations

import uuid

from agentckpt._backends.sql import STEP_PARAMS, positional_sql
from agentckpt._core.writes import Payload, StepWrite

DOC = b'{"messages":["' + b"hello " * 100 + b'"]}'


def _write(**changes: object) -> StepWrite:
    base = StepWrite(
        run_id=uuid.uuid4(),
        step=7,
        parent_step=6,
        kind="delta",
        is_open=True,
        stored=Payload.of(DOC),
        state_version=3,
        write_version=4,
        raw_bytes=len(DOC),
        state_bytes=900,
        checksum=b"\x01" * 32,
        expected_step=6,
        expected_version=2,
        epoch=5,
        snapshot_step=0,
        chain_bytes=1200,
        prune_below=None,
        seal_step=2,
        metadata='{"tokens":3}',
        token=b"\x02" * 16,
    )
    return base._replace(**changes)


def test_positional_is_params_in_the_placeholders_order() -> None:
    for write in (_write(), _write(parent_step=None, epoch=None, metadata=None, kind="snapshot")):
        named = write.params()
        assert tuple(named) == STEP_PARAMS
        assert write.positional() == tuple(named[name] for name in STEP_PARAMS)


def test_named_placeholders_become_their_positions() -> None:
    sql = "select %(step)b, %(run_id)b, %(write_token)b, %(step)b"
    assert positional_sql(sql) == "select $2, $1, $21, $2"
