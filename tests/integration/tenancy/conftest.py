"""Roles for the tenant tests: a non-superuser owner that migrates, an application role
that cannot bypass row-level security, as docs/security.md tells operators to create."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from agentckpt import Store


@dataclass(frozen=True)
class Roles:
    """The two roles, and URLs of one fresh schema as each of them."""

    owner: str
    app: str
    schema: str
    owner_url: str
    app_url: str
    admin_dsn: str

    def dsn(self, role: str) -> str:
        return _as_role(self.admin_dsn, role)


def _as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn.split("?")[0])
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, "", ""))


# Held around the grants on the database and their removal: the pytest-xdist workers
# each create their roles, and two GRANTs (or a GRANT and a DROP OWNED) on one database
# at once fail with "tuple concurrently updated" (its ACL is one catalog row).
_DATABASE_ACL_LOCK = 0x61636B70  # "ackp"


@pytest.fixture(scope="session")
def role_names(pg_server_dsn: str) -> Iterator[tuple[str, str]]:
    """Create the owner and application roles once (roles are cluster-wide)."""
    suffix = uuid.uuid4().hex[:8]
    owner, app = f"ackpt_owner_{suffix}", f"ackpt_app_{suffix}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [_DATABASE_ACL_LOCK])
        conn.execute(f"CREATE ROLE {owner} LOGIN NOSUPERUSER NOBYPASSRLS")
        conn.execute(f"CREATE ROLE {app} LOGIN NOSUPERUSER NOBYPASSRLS")
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        conn.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {owner}')
        conn.execute("SELECT pg_advisory_unlock(%s)", [_DATABASE_ACL_LOCK])
    yield owner, app
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", [_DATABASE_ACL_LOCK])
        for role in (owner, app):
            conn.execute(f"DROP OWNED BY {role} CASCADE")
            conn.execute(f"DROP ROLE {role}")
        conn.execute("SELECT pg_advisory_unlock(%s)", [_DATABASE_ACL_LOCK])


@pytest.fixture
def roles(pg_server_dsn: str, role_names: tuple[str, str]) -> Iterator[Roles]:
    """A schema owned and migrated by the owner role; the app role granted DML only."""
    owner, app = role_names
    schema = f"tn_{uuid.uuid4().hex[:12]}"
    admin = pg_server_dsn.split("?")[0]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema} AUTHORIZATION {owner}")
    owner_url = f"{_as_role(admin, owner)}?schema={schema}"
    Store.connect(owner_url).close()
    with psycopg.connect(_as_role(admin, owner), autocommit=True) as conn:
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {app}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {app}"
        )
        conn.execute(f"REVOKE INSERT, UPDATE, DELETE ON {schema}.schema_migrations FROM {app}")
    yield Roles(
        owner=owner,
        app=app,
        schema=schema,
        owner_url=owner_url,
        app_url=f"{_as_role(admin, app)}?schema={schema}",
        admin_dsn=admin,
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
