"""Secrets and personal data given to the conversation and run APIs never reach the
database: the SQLite file and the PostgreSQL rows are searched for their bytes, near
misses stay as they were, and what was redacted is recorded (paths and kinds only)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentckpt import AgentRun, Conversations, Store
from agentckpt.errors import RedactionError
from agentckpt.redaction import DEFAULT_REDACTORS, placeholder, records_in, redact_text
from agentckpt.runs import Finish
from tests.integration.redaction.stored import stored_bytes as _stored_bytes
from tests.support.sample_store import cli

# (kind, text containing exactly one secret, the secret)
SECRETS = [
    ("openai_key", "use key sk-proj-{r}{r}", "sk-proj-{r}{r}"),
    ("anthropic_key", "ANTHROPIC_API_KEY=sk-ant-api03-{r}{r}{r}", "sk-ant-api03-{r}{r}{r}"),
    ("aws_access_key", "aws id AKIAQX3V7TZ2PLM4RW5N here", "AKIAQX3V7TZ2PLM4RW5N"),
    (
        "aws_secret_key",
        "aws_secret_access_key = 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",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Kq3Lm8Tp",
    ),
    ("github_token", "token ghp_{r36}", "ghp_{r36}"),
    ("github_token", "pat github_pat_11ABCDEFG0{r}", "github_pat_11ABCDEFG0{r}"),
    ("google_api_key", "maps AIzaSyD{r33}", "AIzaSyD{r33}"),
    ("slack_token", "bot xoxb-2048-4096-{r}", "xoxb-2048-4096-{r}"),
    ("bearer_token", "Authorization: Bearer eyJhbGciOi.{r}.sig", "eyJhbGciOi.{r}.sig"),
    ("url_password", "DSN postgresql://app:Tr0ub4dor%26{r}@db.internal:5432/x", "Tr0ub4dor%26{r}"),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow{r}\n-----END RSA PRIVATE KEY-----",
        "MIIEow{r}",
    ),
    (
        "email",
        "write to grace.hopper+{r}@navy.example.org today",
        "grace.hopper+{r}@navy.example.org",
    ),
    ("phone", "call +1 (415) 555-0123 after six", "(415) 555-0123"),
    ("phone", "WhatsApp +447911123456", "+447911123456"),
    ("card_number", "card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111"),
    ("card_number", "amex 378282246310005", "378282246310005"),
]
# Text that looks close and must be stored as it is.
NEAR_MISSES = [
    "the sk-learn docs, sk-short",
    "AKIA is a prefix; AKIA123 is too short",
    "release 2024-01-15, version 1.2.3.4, build 20240115",
    "ip 192.168.100.200 and port 5432",
    "ssh user@localhost or admin@intranet",
    "order 4111 1111 1111 1112 fails the Luhn check",
    "id 1234567890123 is no card",
    "postgresql://db.internal:5432/app has no password",
    "Bearer short",
    "ghp_tooshort",
    "call extension 5550123",
    "-----BEGIN PUBLIC KEY----- is public",
]


def _corpus() -> list[tuple[str, str, str]]:
    token = uuid.uuid4().hex  # 32 characters, unique per test run
    fill = {"r": token, "r36": (token + token)[:36], "r33": token}
    return [(k, t.format(**fill), s.format(**fill)) for k, t, s in SECRETS]


def test_each_secret_is_found_and_each_near_miss_is_not() -> None:
    for kind, text, secret in _corpus():
        redacted, found = redact_text(text, DEFAULT_REDACTORS)
        assert secret not in redacted, (kind, text)
        assert placeholder(kind) in redacted, (kind, redacted)
        assert [r.kind for r in found] == [kind]
    for text in NEAR_MISSES:
        assert redact_text(text, DEFAULT_REDACTORS) == (text, []), text


def test_a_conversation_stores_no_secret(url: str, tmp_path: Path, capsys: Any) -> None:
    corpus = _corpus()
    big_result = {"rows": [text for _, text, _ in corpus] * 40}  # past the blob threshold
    with Store.connect(url) as store:
        conversations = Conversations(store, redactors=DEFAULT_REDACTORS)
        conv = conversations.start(agent_id="support", agent_config={"model": "m"}, tools=["t"])
        for _, text, _ in corpus:
            conv.add_user_message(text)
            conv.add_assistant_message(f"noted: {text}")
        conv.add_user_message("look it up; " + " / ".join(NEAR_MISSES))
        call = conv.start_tool_call("lookup", {"query": corpus[0][1], "near": NEAR_MISSES})
        conv.finish_tool_call(call, big_result)
        conv.add_assistant_message("done")
        run = store.get_run(conv.conversation_id)
    stored = _stored_bytes(url, tmp_path)
    for kind, _, secret in corpus:
        assert secret.encode() not in stored, kind
        assert placeholder(kind).encode() in stored, kind
    for text in NEAR_MISSES:
        assert text.encode() in stored, text
    records = records_in(run.metadata)
    assert records[1][0].path == "/conversation/0/content"
    assert records[1][0].kind == corpus[0][0]
    kinds = {r.kind for found in records.values() for r in found}
    assert kinds == {kind for kind, _, _ in corpus}
    last = records[max(records)]
    assert {r.path.rsplit("/", 1)[-1] for r in last} >= {"query", "0"}
    assert not any("REDACTED" in r.path for found in records.values() for r in found)

    code, out, _ = cli(capsys, "runs", "show", str(run.run_id), "--url", url)
    assert code == 0
    assert "redacted (" in out
    assert "/conversation/0/content" in out
    for _, _, secret in corpus:
        assert secret not in out
    code, out, _ = cli(capsys, "runs", "show", str(run.run_id), "--url", url, "--json")
    assert json.loads(out)["redactions"]["1"][0]["kind"] == corpus[0][0]


def test_a_run_stores_no_secret(url: str, tmp_path: Path) -> None:
    corpus = _corpus()
    with Store.connect(url) as store:

        def step(ctx: Any) -> Any:
            n = ctx.state["n"]
            if n == len(corpus):
                return Finish({**ctx.state, "note": NEAR_MISSES})
            result = ctx.effect("lookup", lambda key: {"answer": corpus[n][1]})
            return {"n": n + 1, "log": [*ctx.state["log"], corpus[n][1]], "last": result}

        agent = AgentRun(store, initial_state={"n": 0, "log": []}, redactors=DEFAULT_REDACTORS)
        agent.run(step)
        run = store.get_run(agent.run_id)
    stored = _stored_bytes(url, tmp_path)
    for kind, _, secret in corpus:
        assert secret.encode() not in stored, kind
    for text in NEAR_MISSES:
        assert text.encode() in stored, text
    records = records_in(run.metadata)
    assert {r.kind for r in records[1]} == {corpus[0][0]}
    # The effect's result was redacted as it was recorded, so the state got it clean.
    assert {r.path for r in records[1]} == {"/log/0"}


def test_a_custom_redactor_and_one_that_fails(tmp_path: Path) -> None:
    def employee_id(text: str) -> str:
        return text.replace("EMP-0042", placeholder("employee_id"))

    def broken(text: str) -> str:
        raise RuntimeError("oops " + text)

    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Store.connect(url) as store:
        conversations = Conversations(store, redactors=[employee_id])
        conv = conversations.start(agent_id="hr", agent_config={"model": "m"}, tools=[])
        conv.add_user_message("badge EMP-0042")
        conv.add_assistant_message("ok")
        records = records_in(store.get_run(conv.conversation_id).metadata)
        assert [(r.path, r.kind) for r in records[1]] == [
            ("/conversation/0/content", "employee_id")
        ]

        failing = Conversations(store, redactors=[broken])
        conv2 = failing.start(agent_id="hr", agent_config={"model": "m"}, tools=[])
        with pytest.raises(
            RedactionError, match="'broken' failed at /conversation/0/content"
        ) as exc:
            conv2.add_user_message("secret text")
        assert "secret text" not in str(exc.value)
        assert store.latest(conv2.conversation_id) is None
    assert b"EMP-0042" not in _stored_bytes(url, tmp_path)


def test_without_redactors_the_search_finds_every_secret(url: str, tmp_path: Path) -> None:
    """The control: the same search sees the secrets when nothing redacts them (also in
    a blob and compressed), so its silence above means something."""
    corpus = _corpus()
    with Store.connect(url) as store:
        conv = Conversations(store).start(agent_id="a", agent_config={"model": "m"}, tools=[])
        conv.add_user_message(" ".join(text for _, text, _ in corpus))
        call = conv.start_tool_call("lookup", {"q": 1})
        conv.finish_tool_call(call, {"rows": [corpus[0][1]] * 400})
        conv.add_assistant_message("done")
    stored = _stored_bytes(url, tmp_path)
    for kind, _, secret in corpus:
        assert secret.encode() in stored, kind
