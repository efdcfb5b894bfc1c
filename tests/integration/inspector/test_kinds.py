"""Every kind of run reads as what it is, over real HTTP, from SQLite and PostgreSQL.

The runs are written by the code that writes them in production (``fixtures.py``): a
compiled LangGraph graph on AgentckptSaver, AgentckptSession.add_items, Conversations,
a long run of 300 kept steps.
"""

from __future__ import annotations

import html
import json
import re

from tests.integration.inspector.conftest import Kinds, fetch, page_of
from tests.integration.inspector.fixtures import LONG_STEPS, SESSION_ID, THREAD_ID


def text(body: str) -> str:
    """A page's visible text, roughly: tags dropped, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_a_langgraph_thread_reads_as_its_messages(kinds: Kinds) -> None:
    body = page_of(kinds.base, "runs", kinds.runs.thread)
    shown = text(body)
    assert f"<h1>{THREAD_ID}</h1>" in body  # the thread id is the title
    assert "LangGraph thread" in shown
    assert "checkpoint namespace (root)" in shown
    # LangChain messages decoded and shown by role, with the tool call and its result.
    assert "weather in Berlin" in shown
    assert 'class="msg role-user"' in body
    assert 'class="msg role-assistant"' in body
    assert 'class="msg role-tool"' in body
    assert "lookup" in shown
    assert "call-m1" in shown
    assert "WEATHER IN BERLIN (2 messages so far)" in shown
    assert "answers call-m1" in shown
    assert "$serde" not in body
    assert "msgpack" not in body
    # The interrupt waits: flagged, in the pending writes, and recovery says how to resume.
    assert "waiting on an interrupt" in shown
    assert "send this answer?" in shown
    assert "__interrupt__" in shown
    assert "Command(resume=...)" in shown
    # The subgraph's namespace is another run of the same thread, linked from here.
    assert f'href="/runs/{kinds.runs.subgraph}"' in body
    sub = text(page_of(kinds.base, "runs", kinds.runs.subgraph))
    assert "checkpoint namespace review:" in sub


def test_a_langgraph_step_shows_its_checkpoint_and_lets_you_branch(kinds: Kinds) -> None:
    run = kinds.store.get_run(kinds.runs.thread)
    step = run.head_step
    body = page_of(kinds.base, "runs", kinds.runs.thread, "steps", step)
    shown = text(body)
    assert "State, decoded" in shown
    assert "The answer is AND IN PARIS" in shown
    assert '"checkpoint_id"' in shown
    assert "graph.invoke(None" in shown
    assert f"fork {kinds.runs.thread} --step {step}" in shown


def test_an_agents_session_reads_as_its_items(kinds: Kinds) -> None:
    body = page_of(kinds.base, "runs", kinds.runs.session)
    shown = text(body)
    assert f"<h1>{SESSION_ID}</h1>" in body
    assert "Agents SDK session" in shown
    assert "Where is my order 1234?" in shown
    assert "reasoning" in shown
    assert "The user wants the order status." in shown
    assert "function call" in shown
    assert "lookup_order" in shown
    assert '{"order_id": 1234}' in shown  # arguments stored as JSON text, shown as JSON
    assert "function output" in shown
    assert "answers call_order" in shown
    assert "Order 1234 shipped with DHL." in shown
    # The refund call has no output: flagged on the call and in the recovery card.
    assert body.count('class="tool-call dangling"') == 1
    assert "dangling tool call" in shown
    assert "refund_shipping" in shown


def test_a_conversation_cut_off_mid_turn_is_flagged(kinds: Kinds) -> None:
    body = page_of(kinds.base, "runs", kinds.runs.pending)
    shown = text(body)
    assert 'class="card recovery attention"' in body
    assert "open turn step 2 is open" in shown
    assert "pending user message user message #2 has no complete reply" in shown
    assert "dangling tool call 1 tool call without a result (send_email)" in shown
    assert "replay it" in shown
    assert "'interrupted' error result" in shown
    assert body.count('class="tool-call dangling"') == 1
    finished = text(page_of(kinds.base, "runs", kinds.runs.finished))
    assert "Nothing needs recovering." in finished
    assert "3,223 in, 441 out" in finished  # tokens from the conversation's metadata
    assert "$0.0270" in finished


def test_json_blobs_are_shown_inline_and_download_with_their_type(kinds: Kinds) -> None:
    body = page_of(kinds.base, "runs", kinds.runs.finished)
    match = re.search(r'href="(/runs/[^"]+/blobs/([0-9a-f]{64}))"', body)
    assert match, "no blob link"
    assert "application/json" in body
    assert "&#34;forecast&#34;" in body or "&quot;forecast&quot;" in body  # shown inline
    assert "cut here: download it for the rest" in body  # the size cap
    blob = fetch(kinds.base.rstrip("/") + match[1])
    assert blob.status == 200
    assert blob.headers["Content-Type"] == "application/json"
    assert blob.headers["Content-Disposition"] == (f'attachment; filename="{match[2][:16]}.json"')
    assert "sandbox" in blob.headers["Content-Security-Policy"]
    assert json.loads(blob.body)["forecast"][399] == {"day": 399, "high": 409, "low": 399}


def test_every_kept_step_of_a_long_run_is_reachable(kinds: Kinds) -> None:
    rid = kinds.runs.long_run
    newest = page_of(kinds.base, "runs", rid)
    assert f"Timeline ({LONG_STEPS} kept steps)" in newest
    assert newest.count('class="step"') == 50
    assert 'id="step-300"' in newest
    assert 'id="step-250"' not in newest
    seen: set[int] = set()
    href = re.search(r'href="([^"]+)">« oldest', newest)
    assert href
    address = html.unescape(href[1]).split("#")[0]
    while True:
        body = page_of(kinds.base, address.lstrip("/"))
        seen |= {int(n) for n in re.findall(r'id="step-(\d+)"', body)}
        newer = re.search(r'class="newer" href="([^"]+)"', body)
        if not newer:
            break
        address = html.unescape(newer[1]).split("#")[0]
    assert seen == set(range(1, LONG_STEPS + 1))
    middle = text(page_of(kinds.base, "runs", rid, query="from=101"))
    assert "steps 101\u2013150 (101\u2013150 of 300)" in middle
    assert "replace /cursor" in middle
    assert '"page-101"' in middle


def test_a_diff_shows_old_and_new_values_side_by_side(kinds: Kinds) -> None:
    half = LONG_STEPS // 2
    body = page_of(kinds.base, "runs", kinds.runs.long_run, "diff", query=f"a={half - 1}&b={half}")
    rows = re.findall(r'<tr class="op op-row-(\w+)">(.*?)</tr>', body, re.S)
    by_path = {re.search(r'<span class="mono">([^<]*)</span>', r)[1]: (op, r) for op, r in rows}  # type: ignore[index]
    op, row = by_path["/phase"]
    assert op == "replace"
    before, after = re.findall(r'<td class="(?:before|after)">(.*?)</td>', row, re.S)
    assert "crawl" in before
    assert "index" in after
    op, row = by_path["/scratch"]
    assert op == "remove"
    assert "x" in text(re.findall(r'<td class="before">(.*?)</td>', row, re.S)[0])
    op, row = by_path["/pages/-"]
    assert op == "add"
    assert f"example.com/{half}" in row


def test_growth_charts_read_at_any_scale(kinds: Kinds) -> None:
    one = page_of(kinds.base, "runs", kinds.runs.subgraph)
    assert one.count("<svg") == 2
    long = page_of(kinds.base, "runs", kinds.runs.long_run)
    # 300 steps: a bar per two steps, said in the chart's label.
    assert long.count('<rect class="bar') == LONG_STEPS // 2
    assert "each bar: the largest of 2 consecutive steps" in long
    for chart in long.split("<svg")[1:]:
        ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', chart)
        assert ticks[0] == "0"
        assert all(re.fullmatch(r"\d+(\.\d+)? [KMG]?B", t) for t in ticks[1:]), ticks
        assert len(set(ticks)) == len(ticks)  # no two ticks labelled alike


def test_the_list_pages_searches_and_filters(kinds: Kinds) -> None:
    everything = text(page_of(kinds.base))
    assert "runs in this store" in everything
    threads = text(page_of(kinds.base, query=f"q={THREAD_ID}"))
    # The thread's root namespace and its two review subgraphs (one per question asked).
    assert re.search(r"\b3 of 7 runs match", threads)
    assert f"{THREAD_ID} · review:" in threads
    session = text(page_of(kinds.base, query="q=SUPPORT-42"))  # ignoring case
    assert re.search(r"\b1 of 7 runs match", session)
    assert SESSION_ID in session
    flagged = page_of(kinds.base, query="flag=open-turn")
    assert str(kinds.runs.pending) in flagged
    assert str(kinds.runs.finished) not in flagged
    assert re.search(r"\b1 of 7 runs match", text(flagged))
    by_kind = page_of(kinds.base, query="kind=langgraph&status=active")
    assert 'class="current">LangGraph threads' in by_kind
    assert re.search(r"\b3 of 7 runs match", text(by_kind))
    usage = text(page_of(kinds.base, query="agent=weather-agent"))
    assert "3,223 input and 441 output tokens, $0.0270" in usage
    assert fetch(kinds.base + "?flag=nonsense").status == 400
    assert fetch(kinds.base + "?after=not-a-cursor").status == 400


def test_active_runs_refresh_live_without_script(kinds: Kinds) -> None:
    rid = kinds.runs.pending
    still = page_of(kinds.base, "runs", rid)
    assert 'http-equiv="refresh"' not in still
    assert f'href="/runs/{rid}?live=1"' in still
    live = page_of(kinds.base, "runs", rid, query="live=1")
    assert '<meta http-equiv="refresh" content="5">' in live
    assert "<script" not in live
