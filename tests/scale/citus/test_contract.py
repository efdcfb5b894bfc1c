"""The contract suite (tests/contract/test_store.py, test_group_commit.py), sync and
async, on the Citus cluster: the same test functions, with ``url`` a Citus store."""

from tests.contract.test_group_commit import *  # noqa: F403
from tests.contract.test_store import *  # noqa: F403
from tests.scale.reuse import only_on_this_store

only_on_this_store(globals())
