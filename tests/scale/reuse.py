"""What the scale suites share: the store's tables, and reusing other suites' tests."""

from __future__ import annotations

# Every table of the store holding rows of runs (all but schema_migrations).
TABLES = (
    "runs",
    "steps",
    "blobs",
    "effects",
    "history",
    "events",
    "run_threads",
    "step_index",
    "step_writes",
)


# Fixtures that name a plain PostgreSQL or SQLite store.
PLAIN_FIXTURES = {"pg_url", "sqlite_url", "pg_blank_url", "blank_url"}


def only_on_this_store(namespace: dict[str, object]) -> None:
    """Drop the imported tests that ask for a plain PostgreSQL or SQLite store by name
    (``pg_url``, ``sqlite_url``, ``blank_url``): they run in their own suites already.

    Also drop an imported ``url`` fixture (test_failures.py has its own): in the
    importing module it would override the suite's ``url`` (conftest.py), and the
    tests would run on SQLite and plain PostgreSQL instead.
    """
    namespace.pop("url", None)
    for name, value in list(namespace.items()):
        code = getattr(value, "__code__", None)
        names = set(code.co_varnames) if code is not None else set()
        if (
            name.startswith("test_")
            and {"pg_url", "sqlite_url", "pg_blank_url", "blank_url"} & names
        ):
            del namespace[name]
