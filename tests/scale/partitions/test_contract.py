"""The contract suite (tests/contract/test_store.py, test_group_commit.py), sync and
async, on a store whose tables are hash-partitioned by run_id."""

from tests.contract.test_group_commit import *  # noqa: F403
from tests.contract.test_store import *  # noqa: F403
from tests.scale.reuse import only_on_this_store

only_on_this_store(globals())
