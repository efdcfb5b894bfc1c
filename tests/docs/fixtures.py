"""What doc blocks name in their markers (see :mod:`tests.docs.blocks`): small and explicit.

``SETUPS`` run in a subprocess of their own, in the page's directory, before the block:
they make the files and databases the block reads. ``PRELUDES`` are prepended to a
Python block: they define the names a fragment uses. Both get the block's environment
(``DOC_TEST_PG_URL`` and ``DOC_TEST_PG_DSN`` for a block marked ``postgres``).
"""

from __future__ import annotations

# A LangGraph graph that needs no model: one node answers every user message.
_LANGGRAPH_BUILDER = """
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class _State(TypedDict):
    messages: Annotated[list, add_messages]


def _answer(state: _State) -> dict:
    return {"messages": [AIMessage(content=f"you said {len(state['messages'])} things")]}


builder = StateGraph(_State)
builder.add_node("answer", _answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
"""

SETUPS: dict[str, str] = {
    # The application module `agentckpt migrate-states --migrations` names in docs/cli.md.
    "myapp-states": """
from pathlib import Path

Path("myapp").mkdir(exist_ok=True)
Path("myapp/__init__.py").write_text("")
Path("myapp/states.py").write_text('''
from agentckpt import StateMigrations

MIGRATIONS = StateMigrations(current=2)


@MIGRATIONS.register(1)
def add_tags(state):
    return {**state, "tags": []}
''')
""",
    # LangGraph's own savers, each with one thread: the SQLite file checkpoints.sqlite,
    # and, for a block marked postgres, PostgresSaver's tables in the test's database.
    "langgraph-savers": _LANGGRAPH_BUILDER
    + """
import os

from langgraph.checkpoint.sqlite import SqliteSaver

# A thread id of its own: the page's other examples use "user-42" in the same stores.
config = {"configurable": {"thread_id": "copied-from-langgraph"}}
with SqliteSaver.from_conn_string("checkpoints.sqlite") as saver:
    builder.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]}, config)
if "DOC_TEST_PG_DSN" in os.environ:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(os.environ["DOC_TEST_PG_DSN"]) as saver:
        saver.setup()
        builder.compile(checkpointer=saver).invoke({"messages": [("user", "hi")]}, config)
""",
}

PRELUDES: dict[str, str] = {
    # docs/langgraph.md: the graph builder and names of the page's first example.
    "langgraph-builder": _LANGGRAPH_BUILDER
    + """
import os

from agentckpt.integrations.langgraph import AgentckptSaver

config = {"configurable": {"thread_id": "user-42"}}
inputs = {"messages": [("user", "hi")]}
DB_URI = os.environ.get("DOC_TEST_PG_DSN", "")
""",
    # docs/conversations.md: the quick start's names, and a conversation a crash cut off
    # mid-turn, in agents.db.
    "conversation": """
import time

from agentckpt import Store
from agentckpt.conversation import ConversationOptions, Conversations, state_migrations

AGENT_CONFIG = {"model": "llama-3-70b", "lora_adapters": ["weather-lora-v2"],
                "temperature": 0.3, "max_tokens": 4096}
TOOLS = ["get_weather", "search_web", "send_email"]
with Store.connect("sqlite:///agents.db") as _store:
    _conv = Conversations(_store).start(agent_id="weather-agent", agent_config=AGENT_CONFIG,
                                        tools=TOOLS)
    _conv.add_user_message("What's the weather in Berlin?")
    conversation_id = _conv.conversation_id
store = Store.connect("sqlite:///agents.db")
conversations = Conversations(store)
""",
    # docs/runs.md: an agent whose plan is done after three actions, a store, a blob
    # directory, and a RecoveryWorker whose run_forever polls once (it would not return).
    "run-loop": """
import uuid

from agentckpt import Store
from agentckpt.blobstores import LocalBlobStore
from agentckpt.runs import AgentRun, Finish, RecoveryWorker

run_id = uuid.uuid4()


def plan_next(state):
    return {"n": len(state["history"]) + 1}


def execute(action, idempotency_key):
    return {"action": action, "key": idempotency_key, "done": action["n"] >= 3}


def step(ctx):
    state = ctx.state
    state["history"].append(ctx.step)
    return Finish(state) if len(state["history"]) >= 3 else state


planner_step = step
url = "sqlite:///runs.db"
store = Store.connect(url)
blob_store = LocalBlobStore("blobs")
run = AgentRun(store, uuid.uuid4(), agent_id="planner", initial_state={"history": []})
RecoveryWorker.run_forever = lambda self, poll_interval=5.0: self.recover_once()
""",
    # docs/inspector.md: serve_forever serves one request (the runs page), then returns.
    "serve-once": """
import socketserver
import threading
import urllib.request

_serve = socketserver.BaseServer.serve_forever


def _serve_once(self, poll_interval=0.5):
    thread = threading.Thread(target=_serve, args=(self, 0.05))
    thread.start()
    try:
        host, port = self.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/", timeout=30) as page:
            assert page.status == 200
            print("served", len(page.read()), "bytes")
    finally:
        self.shutdown()
        thread.join()


socketserver.BaseServer.serve_forever = _serve_once
""",
}
