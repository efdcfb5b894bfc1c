"""Two tenants may use the same LangGraph thread id or Agents SDK session id: each gets a
run of its own, and neither sees the other's checkpoints or items."""

from __future__ import annotations

from typing import Any

import pytest

from agentckpt import SnapshotPolicy, Store
from tests.integration.tenancy.test_isolation import tenant_url  # noqa: F401  (fixture)


def test_the_same_thread_id_in_two_tenants_is_two_threads(tenant_url: str) -> None:  # noqa: F811
    pytest.importorskip("langgraph", reason="pip install 'agentckpt[langgraph]'")
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    from agentckpt.integrations.langgraph import AgentckptSaver

    def bot(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"echo {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    cfg = {"configurable": {"thread_id": "support-1"}}
    seen = {}
    for tenant in ("acme", "globex"):
        policy = SnapshotPolicy(prune=False)
        with Store.connect(tenant_url, tenant=tenant, migrate=False, policy=policy) as store:
            graph = builder.compile(checkpointer=AgentckptSaver(store=store))
            graph.invoke({"messages": [HumanMessage(f"I am {tenant}")]}, cfg)
            seen[tenant] = [m.content for m in graph.get_state(cfg).values["messages"]]
            run = store.get_run(AgentckptSaver.run_id("support-1", tenant=tenant))
            assert run.tenant_id == tenant
    assert seen == {
        "acme": ["I am acme", "echo I am acme"],
        "globex": ["I am globex", "echo I am globex"],
    }
    assert AgentckptSaver.run_id("support-1") != AgentckptSaver.run_id("support-1", tenant="acme")


async def test_the_same_session_id_in_two_tenants_is_two_sessions(tenant_url: str) -> None:  # noqa: F811
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents.session import AgentckptSession

    for tenant in ("acme", "globex"):
        with Store.connect(tenant_url, tenant=tenant, migrate=False) as store:
            session = AgentckptSession("user-42", store=store)
            await session.add_items([{"role": "user", "content": f"I am {tenant}"}])
    for tenant in ("acme", "globex"):
        with Store.connect(tenant_url, tenant=tenant, migrate=False) as store:
            session = AgentckptSession("user-42", store=store)
            assert await session.get_items() == [{"role": "user", "content": f"I am {tenant}"}]


def test_a_session_opened_from_a_url_takes_its_tenant(tmp_path: Any) -> None:
    pytest.importorskip("agents", reason="pip install 'agentckpt[openai-agents]'")
    from agentckpt.integrations.openai_agents.session import AgentckptSession, session_run_id

    url = f"sqlite:///{tmp_path / 's.db'}"
    with AgentckptSession("user-42", url=f"{url}?tenant=acme") as session:
        assert session.run_id == session_run_id("user-42", "acme")
    with AgentckptSession("user-42", url=url) as session:
        assert session.run_id == session_run_id("user-42")
    assert session_run_id("user-42") != session_run_id("user-42", "acme")


def test_export_one_tenant_and_import_into_another(tmp_path: Any, capsys: Any) -> None:
    from tests.support.sample_store import cli

    url = f"sqlite:///{tmp_path / 'x.db'}"
    with Store.connect(url, tenant="acme") as acme, Store.connect(url, tenant="globex") as globex:
        mine = acme.create_run(agent_id="a")
        acme.commit(mine.run_id, {"who": "acme"})
        globex.create_run(agent_id="g")
    dump = tmp_path / "acme.jsonl"
    code, _, err = cli(capsys, "--tenant", "acme", "export", "-o", str(dump), "--url", url)
    assert code == 0, err
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    code, _, err = cli(capsys, "import", str(dump), "--url", copy, "--tenant", "initech")
    assert code == 0, err
    with Store.connect(copy, tenant="initech") as initech, Store.connect(copy) as default:
        runs = initech.list_runs()
        assert [(r.run_id, r.tenant_id) for r in runs] == [(mine.run_id, "initech")]
        checkpoint = initech.latest(mine.run_id)
        assert checkpoint is not None
        assert checkpoint.state == {"who": "acme"}
        assert default.list_runs() == []
