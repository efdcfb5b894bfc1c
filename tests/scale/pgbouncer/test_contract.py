"""The contract suite's connection and commit tests (tests/contract/test_failures.py,
test_group_commit.py), sync and async, through PgBouncer in transaction-pooling mode."""

from tests.contract.test_failures import *  # noqa: F403
from tests.contract.test_group_commit import *  # noqa: F403
from tests.scale.reuse import only_on_this_store

only_on_this_store(globals())
# It kills the server backends named by the store's application_name; behind PgBouncer
# the store's connections end at the pooler, and the server connections are the pool's.
del test_killed_connections_are_replaced  # noqa: F821
