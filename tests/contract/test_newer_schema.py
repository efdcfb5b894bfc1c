"""A schema migrated by a newer agentckpt (a migration version this code does not know)
is refused with MigrationError, with or without migrate (issue 12: it opened silently)."""

from __future__ import annotations

import pytest

from agentckpt import AsyncStore, MigrationError, Store
from tests.support.dbsql import run_sql


@pytest.mark.parametrize("migrate", [True, False])
def test_a_newer_schema_is_refused(url: str, migrate: bool) -> None:
    run_sql(url, "INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_the_future')")
    with pytest.raises(MigrationError, match=r"\[9999\].*newer"):
        Store.connect(url, migrate=migrate)


async def test_a_newer_schema_is_refused_async(url: str) -> None:
    run_sql(url, "INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_the_future')")
    with pytest.raises(MigrationError, match="newer"):
        await AsyncStore.connect(url)


def test_the_current_schema_opens(url: str) -> None:
    with Store.connect(url, migrate=False) as store:
        assert store.create_run().status == "active"
