"""A LangGraph chat graph whose checkpoints live in agentckpt; no network needed.

    pip install 'agentckpt[langgraph]'
    python examples/langgraph_graph.py                       # a SQLite file in a temp dir
    python examples/langgraph_graph.py --url postgresql://localhost/postgres?schema=demo

The model is LangGraph's own fake chat model (canned replies). The script talks for a few
turns, closes the saver, opens a new one as a restarted process would, continues the same
thread, and shows what each checkpoint cost in storage: a delta of about one message.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

from agentckpt.integrations.langgraph import AgentckptSaver

REPLIES = [
    "Hello! I can help you plan the trip.",
    "Lisbon in May is warm; pack light layers.",
    "Take the 28 tram early, before the crowds.",
    "Pastéis de Belém are worth the queue.",
    "Have a great trip!",
]


def build(saver: AgentckptSaver, replies: list[str]) -> Any:
    """A one-node graph: the model answers the conversation so far."""
    model = GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    return builder.compile(checkpointer=saver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="store URL (default: a SQLite file in a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'langgraph_example.db'}"
        config = {"configurable": {"thread_id": "trip-planning"}}

        # First process: three turns.
        with AgentckptSaver.from_url(url) as saver:
            graph = build(saver, REPLIES[:3])
            for question in ["Hi!", "Weather in Lisbon in May?", "How do I get around?"]:
                graph.invoke({"messages": [HumanMessage(question)]}, config)

        # A new process: the same thread continues where it was.
        with AgentckptSaver.from_url(url) as saver:
            graph = build(saver, REPLIES[3:])
            before = len(graph.get_state(config).values["messages"])
            print(f"resumed thread with {before} messages")
            for question in ["Any food tips?", "Thanks!"]:
                graph.invoke({"messages": [HumanMessage(question)]}, config)

            for message in graph.get_state(config).values["messages"]:
                print(f"{message.type:>5}: {message.content}")

            history = list(graph.get_state_history(config))
            print(f"checkpoints: {len(history)}")

            # What each checkpoint cost: the thread's checkpoints are the steps of one run.
            steps = saver.store.steps(saver.run_id("trip-planning"))
            deltas = [s.stored_bytes for s in steps if s.kind == "delta"]
            print(
                f"stored: {sum(s.stored_bytes for s in steps)} bytes in {len(steps)} steps; "
                f"largest delta {max(deltas)} bytes, final state {steps[-1].state_bytes} bytes"
            )


if __name__ == "__main__":
    main()
