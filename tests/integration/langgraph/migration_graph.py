"""A real LangGraph graph for the migration tests: tools, a subgraph with an interrupt.

Every message has a deterministic id (the count of messages before it), so two savers
that continue the same thread produce equal states. The graph: ``agent`` asks the
``tools`` node for a lookup, answers from its result, then the ``review`` subgraph stops
at ``interrupt()`` until the thread is resumed with ``Command(resume=...)``. So a thread
has checkpoints in two namespaces (the root and the subgraph's), pending writes (each
task's, the interrupt's and the resume's) and a checkpoint waiting on an interrupt.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt


def _next_id(state: MessagesState) -> str:
    return f"m{len(state['messages'])}"


def agent(state: MessagesState) -> dict[str, Any]:
    """Ask for a lookup of a user message; answer from a tool result."""
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(f"The answer is {last.content}.", id=_next_id(state))]}
    call = {"name": "lookup", "args": {"q": str(last.content)}, "id": f"call-{_next_id(state)}"}
    return {"messages": [AIMessage("", tool_calls=[call], id=_next_id(state))]}


def tools(state: MessagesState) -> dict[str, Any]:
    """Run the lookup the last message asked for."""
    call = state["messages"][-1].tool_calls[0]  # type: ignore[attr-defined]
    result = f"{call['args']['q'].upper()} ({len(state['messages'])} messages so far)"
    return {"messages": [ToolMessage(result, tool_call_id=call["id"], id=_next_id(state))]}


def route(state: MessagesState) -> str:
    """To the tools while the agent asks for one, else to the review."""
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else "review"


def approve(state: MessagesState) -> dict[str, Any]:
    """Stop until a person answers, then record the answer."""
    answer = interrupt({"question": "send this answer?", "answer": state["messages"][-1].content})
    return {"messages": [AIMessage(f"Reviewed: {answer}", id=_next_id(state))]}


def build(checkpointer: Any) -> Any:
    """The graph, compiled on ``checkpointer``."""
    review = StateGraph(MessagesState)
    review.add_node("approve", approve)
    review.add_edge(START, "approve")
    review.add_edge("approve", END)

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_node("review", review.compile())
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", "review"])
    builder.add_edge("tools", "agent")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer)


def config(thread_id: str) -> dict[str, Any]:
    """The config of a thread."""
    return {"configurable": {"thread_id": thread_id}}


def ask(graph: Any, thread_id: str, question: str) -> Any:
    """A user turn; the graph stops at the review's interrupt."""
    state = graph.get_state(config(thread_id))
    count = len(state.values.get("messages", [])) if state.values else 0
    return graph.invoke({"messages": [HumanMessage(question, id=f"m{count}")]}, config(thread_id))


def resume(graph: Any, thread_id: str, answer: str) -> Any:
    """Answer the pending interrupt."""
    return graph.invoke(Command(resume=answer), config(thread_id))


def start_threads(graph: Any) -> None:
    """The threads the migration tests import: finished turns, and one left interrupted."""
    ask(graph, "alice", "weather in Berlin")
    resume(graph, "alice", "yes")
    ask(graph, "alice", "and in Paris")  # waits on the interrupt
    ask(graph, "bob", "capital of Peru")
    resume(graph, "bob", "fine")


def continue_threads(graph: Any) -> None:
    """What both savers do after the import: resume alice, another turn for each."""
    resume(graph, "alice", "ship it")
    ask(graph, "alice", "and in Rome")
    resume(graph, "alice", "ok")
    ask(graph, "bob", "tallest mountain")
    resume(graph, "bob", "good")


def history(graph: Any, thread_id: str) -> list[Any]:
    """Every state of a thread as comparable values, newest first."""
    return [
        (
            snapshot.config["configurable"]["checkpoint_id"],
            (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
            snapshot.values,
            snapshot.next,
            snapshot.metadata,
            snapshot.created_at,
            [(task.id, task.name, task.interrupts) for task in snapshot.tasks],
        )
        for snapshot in graph.get_state_history(config(thread_id))
    ]


def shape(graph: Any, thread_id: str) -> list[Any]:
    """A thread's history without ids and times, which two savers' continuations differ in."""
    return [
        (
            snapshot.values,
            snapshot.next,
            {k: v for k, v in snapshot.metadata.items() if k != "parents"},
            [(task.name, [i.value for i in task.interrupts]) for task in snapshot.tasks],
        )
        for snapshot in graph.get_state_history(config(thread_id))
    ]


@contextmanager
def sqlite_saver(path: str) -> Iterator[Any]:
    """LangGraph's own SqliteSaver on a file."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(path) as saver:
        yield saver


@contextmanager
def postgres_schema(dsn: str) -> Iterator[str]:
    """A fresh PostgreSQL schema for LangGraph's saver: its connection string; dropped after."""
    import uuid

    import psycopg

    base = dsn.split("?")[0]
    schema = f"lg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{base}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def postgres_saver(conn_string: str) -> Iterator[Any]:
    """LangGraph's own PostgresSaver, its tables set up."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(conn_string) as saver:
        saver.setup()
        yield saver


def checkpoints(saver: Any, thread_id: str) -> list[Any]:
    """Every checkpoint of a thread in every namespace, as the saver lists them."""
    return sorted(
        (
            (
                found.config["configurable"]["checkpoint_ns"],
                found.config["configurable"]["checkpoint_id"],
                (found.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                found.checkpoint,
                found.metadata,
                found.pending_writes,
            )
            for found in saver.list(config(thread_id))
        ),
        key=lambda row: (row[0], row[1]),
    )
