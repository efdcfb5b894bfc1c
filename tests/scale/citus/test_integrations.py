"""The conversation, run-loop, LangGraph and OpenAI Agents tests on the Citus cluster:
the same test functions and fixtures, with ``url`` a Citus store (conftest.py)."""

from tests.integration.conversation.conftest import *  # noqa: F403
from tests.integration.conversation.test_commits import *  # noqa: F403
from tests.integration.conversation.test_recovery import *  # noqa: F403
from tests.integration.langgraph.conftest import *  # noqa: F403
from tests.integration.langgraph.test_saver import *  # noqa: F403
from tests.integration.openai_agents.test_session import *  # noqa: F403
from tests.integration.runs.conftest import *  # noqa: F403
from tests.integration.runs.test_leases import *  # noqa: F403
from tests.integration.runs.test_runloop import *  # noqa: F403
from tests.scale.reuse import only_on_this_store

only_on_this_store(globals())
