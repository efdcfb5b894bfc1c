"""Real runs of every kind for the inspector tests, written by the code that writes them.

- a LangGraph thread: the compiled graph of ``tests/integration/langgraph/migration_graph``
  (a tool call, then a subgraph stopped at ``interrupt()``) on ``AgentckptSaver``;
- an OpenAI Agents session: ``AgentckptSession.add_items`` of a user message, a reasoning
  item, function calls and outputs and an assistant message (no network: items only),
  with one function call left without its output;
- conversations through ``Conversations``: a finished one with usage and a large JSON tool
  result (a blob), and one cut off mid-turn with a tool call still running;
- a long run: 300 kept steps (``prune=False``) whose state grows, with a value replaced
  and one removed between steps;
- :func:`bulk_runs`: many runs at once in one SQL statement, for the paging measurement.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from agentckpt import SnapshotPolicy, Store
from agentckpt._backends.factory import parse_url
from tests.support.sample_store import raw_sql

THREAD_ID = "alice-weather"
SESSION_ID = "support-42"
LONG_STEPS = 300
BIG_RESULT = {"forecast": [{"day": d, "high": 10 + d, "low": d} for d in range(400)]}


@dataclass
class Fixtures:
    """The ids of the runs :func:`populate` wrote."""

    thread: uuid.UUID
    subgraph: uuid.UUID
    session: uuid.UUID
    finished: uuid.UUID
    pending: uuid.UUID
    long_run: uuid.UUID


def langgraph_thread(url: str) -> tuple[uuid.UUID, uuid.UUID]:
    """A LangGraph thread with a tool call, waiting on an interrupt: (root run, subgraph run)."""
    from agentckpt.integrations.langgraph import AgentckptSaver
    from agentckpt.integrations.langgraph.records import thread_run_id
    from tests.integration.langgraph import migration_graph as graph_module

    with AgentckptSaver.from_url(url) as saver:
        graph = graph_module.build(saver)
        graph_module.ask(graph, THREAD_ID, "weather in Berlin")
        graph_module.resume(graph, THREAD_ID, "yes")
        graph_module.ask(graph, THREAD_ID, "and in Paris")  # stops at the review's interrupt
    with Store.connect(url, migrate=False) as store:
        subgraph = next(
            r.run_id
            for r in store.list_runs(kind="langgraph")
            if r.metadata.get("thread_id") == THREAD_ID and r.metadata.get("namespace")
        )
    return thread_run_id(THREAD_ID, ""), subgraph


SESSION_ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "Where is my order 1234?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user wants the order status."}],
    },
    {
        "type": "function_call",
        "call_id": "call_order",
        "name": "lookup_order",
        "arguments": json.dumps({"order_id": 1234}),
        "id": "fc_1",
    },
    {
        "type": "function_call_output",
        "call_id": "call_order",
        "output": json.dumps({"status": "shipped", "carrier": "DHL"}),
    },
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [
            {"type": "output_text", "text": "Order 1234 shipped with DHL.", "annotations": []}
        ],
    },
    {"role": "user", "content": "Refund the shipping, please."},
    {
        "type": "function_call",
        "call_id": "call_refund",
        "name": "refund_shipping",
        "arguments": json.dumps({"order_id": 1234}),
        "id": "fc_2",
    },
]


def openai_session(url: str) -> uuid.UUID:
    """An Agents SDK session whose last function call has no output yet."""
    from agentckpt.integrations.openai_agents.session import AgentckptSession

    async def fill() -> uuid.UUID:
        with AgentckptSession(SESSION_ID, url=url) as session:
            await session.add_items(SESSION_ITEMS[:5])  # type: ignore[arg-type]
            await session.add_items(SESSION_ITEMS[5:])  # type: ignore[arg-type]
            return session.run_id

    return asyncio.run(fill())


def conversations(url: str) -> tuple[uuid.UUID, uuid.UUID]:
    """(a finished conversation with usage and a blob result, one cut off mid-turn)."""
    from agentckpt.conversation import Conversations

    config = {"model": "llama-3-70b", "temperature": 0.3, "max_tokens": 4096}
    tools = ["get_weather", "send_email"]
    with Store.connect(url) as store:
        convs = Conversations(store)
        done = convs.start(
            agent_id="weather-agent",
            agent_config=config,
            tools=tools,
            metadata={"user_id": "user_abc123"},
        )
        done.add_user_message("What's the weather in Berlin this year?")
        call = done.start_tool_call("get_weather", {"city": "Berlin", "days": 400})
        done.finish_tool_call(call, BIG_RESULT, duration_ms=340)
        done.stream("Mild, with highs from 10 to 409.")
        done.complete_turn(input_tokens=1523, output_tokens=421, cost_usd=0.023)
        done.add_user_message("Thanks!")
        done.stream("You are welcome.")
        done.complete_turn(input_tokens=1700, output_tokens=20, cost_usd=0.004)

        cut = convs.start(agent_id="mail-agent", agent_config=config, tools=tools)
        cut.add_user_message("Hello")
        cut.stream("Hi!")
        cut.complete_turn(input_tokens=10, output_tokens=3, cost_usd=0.0001)
        cut.add_user_message("Email Bob that the report is late.")
        cut.stream("Sending it now.")
        cut.start_tool_call("send_email", {"to": "bob@example.com", "subject": "Report"})
        cut.flush()  # durable with the call running; the process "dies" here
        return done.conversation_id, cut.conversation_id


def long_run(url: str, steps: int = LONG_STEPS) -> uuid.UUID:
    """A run with ``steps`` kept steps; a value is replaced and one removed on the way."""
    with Store.connect(url, policy=SnapshotPolicy(interval=25, prune=False)) as store:
        run = store.create_run(agent_id="crawler", kind="run", metadata={"input_tokens": 5})
        state: dict[str, Any] = {"phase": "crawl", "pages": [], "cursor": None, "scratch": "x"}
        for n in range(1, steps + 1):
            state = json.loads(json.dumps(state))
            state["pages"].append({"n": n, "url": f"https://example.com/{n}"})
            state["cursor"] = f"page-{n}"
            if n == steps // 2:
                state["phase"] = "index"
                del state["scratch"]
            store.commit(run.run_id, state)
        return run.run_id


def populate(url: str) -> Fixtures:
    """Every kind of run in one store."""
    thread, subgraph = langgraph_thread(url)
    session = openai_session(url)
    finished, pending = conversations(url)
    return Fixtures(thread, subgraph, session, finished, pending, long_run(url))


def bulk_runs(url: str, count: int, *, agents: int = 7) -> None:
    """``count`` runs in one statement (kinds, statuses, agents, times and token counts
    spread over them), each with the config bytes every run has."""
    if parse_url(url).dialect == "sqlite":
        raw_sql(
            url,
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
            INSERT INTO runs (run_id, kind, agent_id, status, head_step, config, metadata,
                              created_at, updated_at, heartbeat_at)
            SELECT lower(printf('%08x-%04x-4%03x-8%03x-%012x', i, i % 65536, i % 4096,
                                i % 4096, i)),
                   CASE i % 3 WHEN 0 THEN 'conversation' WHEN 1 THEN 'run' ELSE 'session' END,
                   'agent-' || (i % ?),
                   CASE WHEN i % 10 = 0 THEN 'failed' WHEN i % 4 = 0 THEN 'completed'
                        ELSE 'active' END,
                   NULL, X'7B7D',
                   '{"input_tokens": ' || (i % 1000) || ', "output_tokens": ' || (i % 100)
                   || ', "cost_estimate_usd": ' || ((i % 100) / 1000.0) || '}',
                   strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || (i % 30) || ' days'),
                   strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || i || ' minutes'),
                   strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || i || ' minutes')
            FROM n
            """,
            count,
            agents,
        )
        return
    raw_sql(
        url,
        """
        INSERT INTO runs (run_id, kind, agent_id, status, head_step, config, metadata,
                          created_at, updated_at, heartbeat_at)
        SELECT gen_random_uuid(),
               CASE mod(i, 3) WHEN 0 THEN 'conversation' WHEN 1 THEN 'run' ELSE 'session' END,
               'agent-' || (mod(i, ?)),
               CASE WHEN mod(i, 10) = 0 THEN 'failed' WHEN mod(i, 4) = 0 THEN 'completed'
                    ELSE 'active' END,
               NULL, '\\x7b7d'::bytea,
               jsonb_build_object('input_tokens', mod(i, 1000), 'output_tokens', mod(i, 100),
                                  'cost_estimate_usd', mod(i, 100) / 1000.0),
               now() - make_interval(days => mod(i, 30)),
               now() - make_interval(mins => i),
               now() - make_interval(mins => i)
        FROM generate_series(1, ?) AS i
        """,
        agents,
        count,
    )
