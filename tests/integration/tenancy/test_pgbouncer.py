"""Behind PgBouncer in transaction mode, with ONE server connection for every client,
two stores of two tenants interleave on the same server session and each still sees
only its own runs: the tenant is set per transaction, never left on the session."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from agentckpt import Store
from agentckpt.errors import RunNotFoundError


def test_two_tenants_share_one_server_connection(make_pgbouncer: Any, pg_cluster: Any) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner, app, schema = f"own_{suffix}", f"app_{suffix}", f"tb_{suffix}"
    pg_cluster.sql(f"CREATE ROLE {owner} LOGIN NOSUPERUSER NOBYPASSRLS")
    pg_cluster.sql(f"CREATE ROLE {app} LOGIN NOSUPERUSER NOBYPASSRLS")
    pg_cluster.sql(f"GRANT CREATE ON DATABASE postgres TO {owner}")
    pg_cluster.sql(f"CREATE SCHEMA {schema} AUTHORIZATION {owner}")
    try:
        direct = pg_cluster.url.replace("postgres@", f"{owner}@", 1)
        Store.connect(f"{direct}?schema={schema}").close()  # the owner migrates, directly
        for grant in (
            f"GRANT USAGE ON SCHEMA {schema} TO {app}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {app}",
            # PgBouncer does not pass on the startup options that carry search_path.
            f"ALTER ROLE {app} SET search_path = {schema}",
        ):
            pg_cluster.sql(grant)
        bouncer = make_pgbouncer(users=(app,), pool_size=1)
        url = bouncer.url_for(schema=schema, prepare_threshold="none")
        stores = {
            t: Store.connect(url, tenant=t, migrate=False, pool_max=3) for t in ("acme", "globex")
        }
        try:
            owned: dict[str, list[uuid.UUID]] = {t: [] for t in stores}
            errors: list[BaseException] = []

            def work(tenant: str) -> None:
                try:
                    store = stores[tenant]
                    for i in range(15):
                        run = store.create_run(agent_id=tenant)
                        store.commit(run.run_id, {"who": tenant, "i": i})
                        owned[tenant].append(run.run_id)
                        assert {r.agent_id for r in store.list_runs(limit=1000)} == {tenant}
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=work, args=(t,)) for t in stores]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            assert not errors, errors
            pools = [p for p in bouncer.show("POOLS") if p["user"] == app]
            assert sum(p["sv_active"] + p["sv_idle"] + p["sv_used"] for p in pools) <= 1
            for tenant, store in stores.items():
                other = "globex" if tenant == "acme" else "acme"
                mine = {r.run_id for r in store.list_runs(limit=1000)}
                assert mine == set(owned[tenant])
                for run_id in owned[other][:3]:
                    with pytest.raises(RunNotFoundError):
                        store.latest(run_id)
                checkpoint = store.latest(owned[tenant][-1])
                assert checkpoint is not None
                assert checkpoint.state["who"] == tenant
        finally:
            for store in stores.values():
                store.close()
    finally:
        pg_cluster.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        for role in (owner, app):
            pg_cluster.sql(f"DROP OWNED BY {role} CASCADE")
            pg_cluster.sql(f"DROP ROLE {role}")
