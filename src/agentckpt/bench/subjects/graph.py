"""Subjects (e) and (f): a real compiled LangGraph ``StateGraph``, one ``ainvoke`` a turn.

What a LangGraph user runs, not a model of it: a graph whose state has a ``messages``
channel with LangGraph's ``add_messages`` reducer and a ``usage`` channel, and one node,
``agent``, that answers. Each turn is one ``ainvoke`` with the user's ``HumanMessage``;
the node returns the turn's reply as LangChain messages: when the turn calls tools, an
``AIMessage`` with the tool calls and one ``ToolMessage`` per result (its JSON), then the
final ``AIMessage``; plus the usage. LangGraph's loop writes its checkpoints and pending
writes through the saver, as in production: (e) on LangGraph's own saver
(``AsyncPostgresSaver`` / ``AsyncSqliteSaver``, set up as baseline (c)), (f) on
``AgentckptSaver``. One compiled graph and one saver serve every agent. The conversation
workload only (a long run is not a chat); opt-in (``--subjects all``) because a compiled
graph is slow to drive.

Resume is ``aget_state`` on the thread; it returns the user and final assistant messages
(tool messages are not counted) and the last one's content, which the driver checks.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Annotated, Any, TypedDict

from agentckpt.bench.errors import BenchmarkError
from agentckpt.bench.extra import INSTALL
from agentckpt.bench.subjects.agentckpt import store_url
from agentckpt.bench.subjects.base import Place
from agentckpt.bench.subjects.langgraph import LangGraphSavers
from agentckpt.bench.workload import ConversationSpec, TurnSpec

__all__ = ["AgentckptGraph", "LangGraphGraph"]


def _usage(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {key: old.get(key, 0) + value for key, value in new.items()}


def _build(saver: Any, turns: dict[str, TurnSpec]) -> Any:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    # The functional form: this module's annotations are strings, which LangGraph would
    # resolve in the module's namespace, where these names are not.
    State = TypedDict(  # noqa: UP013
        "State",
        {
            "messages": Annotated[list[Any], add_messages],
            "usage": Annotated[dict[str, Any], _usage],
        },
    )

    def agent(state: State, config: RunnableConfig) -> dict[str, Any]:
        turn = turns[config["configurable"]["thread_id"]]
        out: list[Any] = []
        if turn.tool_calls:
            ids = [f"call_{turn.number}_{i}" for i in range(len(turn.tool_calls))]
            calls = [
                {"name": c.tool_name, "args": c.arguments, "id": i}
                for c, i in zip(turn.tool_calls, ids, strict=True)
            ]
            out.append(AIMessage(content="", tool_calls=calls))
            out += [
                ToolMessage(content=json.dumps(c.result), tool_call_id=i, name=c.tool_name)
                for c, i in zip(turn.tool_calls, ids, strict=True)
            ]
        out.append(AIMessage(content=turn.assistant_content))
        usage = {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cost_usd": turn.cost_usd,
        }
        return {"messages": out, "usage": usage}

    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder.compile(checkpointer=saver)


class GraphConversations:
    """Conversations through a compiled graph: one ``ainvoke`` per turn."""

    def __init__(self, saver: Any, close: Any) -> None:
        self.turns: dict[str, TurnSpec] = {}
        self._close = close
        self.graph = _build(saver, self.turns)

    @classmethod
    async def open(cls, saver: Any, close: Any) -> GraphConversations:
        """Compile the graph on ``saver``; on failure close the saver's connections."""
        try:
            return cls(saver, close)
        except BaseException:
            await close()
            raise

    @staticmethod
    def _config(spec: ConversationSpec) -> dict[str, Any]:
        return {"configurable": {"thread_id": str(spec.conversation_id)}}

    async def start(self, spec: ConversationSpec) -> None:
        """Nothing is written before the first turn."""

    async def whole_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """One ``ainvoke`` with the user's message; the node adds the reply."""
        from langchain_core.messages import HumanMessage

        self.turns[str(spec.conversation_id)] = turn
        await self.graph.ainvoke(
            {"messages": [HumanMessage(content=turn.user_content)]}, self._config(spec)
        )

    async def user_message(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Not used: the driver calls :meth:`whole_turn`."""
        raise BenchmarkError("the graph subject writes whole turns")

    async def complete_turn(self, spec: ConversationSpec, turn: TurnSpec) -> None:
        """Not used: the driver calls :meth:`whole_turn`."""
        raise BenchmarkError("the graph subject writes whole turns")

    async def _chat(self, spec: ConversationSpec) -> list[Any]:
        snapshot = await self.graph.aget_state(self._config(spec))
        return [
            m
            for m in snapshot.values.get("messages", [])
            if m.type == "human" or (m.type == "ai" and not m.tool_calls)
        ]

    async def read_latest(self, spec: ConversationSpec) -> int:
        """``aget_state``: the number of user and final assistant messages."""
        return len(await self._chat(spec))

    async def resume(self, spec: ConversationSpec) -> tuple[int, Any]:
        """``aget_state`` of the thread."""
        chat = await self._chat(spec)
        return len(chat), chat[-1].content if chat else None

    async def close(self) -> None:
        """Close the saver's connections."""
        await self._close()


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


class _GraphKind:
    has_long_run = False

    def _graph_missing(self) -> str | None:
        if _missing("langgraph.graph") or _missing("langchain_core"):
            return f"langgraph is not installed ({INSTALL})"
        return None

    async def long_run(self, place: Place) -> Any:
        """Not measured: the graph subjects run the conversation workload."""
        raise BenchmarkError("the graph subjects run the conversation workload only")


class LangGraphGraph(_GraphKind):
    """Subject (e): the compiled graph on LangGraph's own saver."""

    name = "graph"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(e) graph-" + ("postgres" if dialect == "postgresql" else "sqlite")

    def unavailable(self, dialect: str) -> str | None:
        """Why the graph cannot run here."""
        return self._graph_missing() or LangGraphSavers().unavailable(dialect)

    async def conversations(self, place: Place) -> GraphConversations:
        """Set LangGraph's saver up (as baseline (c)) and compile the graph on it."""
        saver, close = await LangGraphSavers().open_saver(place)
        return await GraphConversations.open(saver, close)


class AgentckptGraph(_GraphKind):
    """Subject (f): the compiled graph on ``AgentckptSaver``."""

    name = "graph_agentckpt"

    def label(self, dialect: str) -> str:
        """Column header."""
        return "(f) graph-agentckpt"

    def unavailable(self, dialect: str) -> str | None:
        """Why the graph cannot run here."""
        return self._graph_missing()

    async def conversations(self, place: Place) -> GraphConversations:
        """Open ``AgentckptSaver`` on the place (migrating it) and compile the graph."""
        from agentckpt.integrations.langgraph.saver import AgentckptSaver

        saver = AgentckptSaver(store_url(place))
        await saver.asetup()
        return await GraphConversations.open(saver, saver.aclose)
