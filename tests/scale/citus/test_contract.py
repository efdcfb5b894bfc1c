"""The contract suite (tests/contract: test_store.py, test_group_commit.py,
test_failures.py), sync and async, on the Citus cluster: the same test functions, with
``url`` a Citus store. test_bad_input.py is left out for time (its checks run before
the database; it passed on Citus when tried, 352 tests with these)."""

from tests.contract.test_failures import *  # noqa: F403
from tests.contract.test_group_commit import *  # noqa: F403
from tests.contract.test_store import *  # noqa: F403
from tests.scale.reuse import only_on_this_store

only_on_this_store(globals())
# Its helper calls pg_terminate_backend(<int>), ambiguous on Citus (which adds a bigint
# overload for global process ids); a worker SIGKILLed under load is test_batches.py's.
del test_killed_connections_are_replaced  # noqa: F821
