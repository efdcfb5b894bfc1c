"""CLI conventions: paged `runs list`, validated filters, --json everywhere, one
timestamp format; `export --format transcript`; `stats --costs`; `retention`."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from agentckpt import Store
from agentckpt.conversation import ConversationOptions, Conversations
from agentckpt.redaction import DEFAULT_REDACTORS
from tests.support.sample_store import cli, populate

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z")


def many_runs(url: str, count: int) -> list[uuid.UUID]:
    with Store.connect(url) as store:
        return [store.create_run(agent_id=f"agent-{n % 2}").run_id for n in range(count)]


def test_runs_list_pages_with_a_cursor_and_says_how_many_more(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    made = set(many_runs(url, 7))
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--limit", "3")
    assert code == 0
    last = out.splitlines()[-1]
    match = re.fullmatch(r"4 more; use --after (\S+)", last)
    assert match, last
    # The cursor's time is in the listing's one timestamp format, to the microsecond.
    assert ISO_UTC.fullmatch(match[1].split(",")[0]), match[1]
    seen = [line.split()[0] for line in out.splitlines()[2:-1]]
    assert len(seen) == 3
    code, out, err = cli(
        capsys, "--url", url, "runs", "list", "--ids", "--limit", "3", "--after", match[1]
    )
    page2 = out.split()
    assert len(page2) == 3
    assert "more runs; use --after" in err
    cursor = err.split("--after ")[1].strip()
    code, out, err = cli(capsys, "--url", url, "runs", "list", "--ids", "--after", cursor)
    page3 = out.split()
    assert err == ""
    assert {uuid.UUID(r) for r in seen + page2 + page3} == made
    # A cursor printed by an earlier version (an offset, not Z) still reads the same page.
    old = match[1].replace("Z,", "+00:00,")
    code, out, _ = cli(
        capsys, "--url", url, "runs", "list", "--ids", "--limit", "3", "--after", old
    )
    assert out.split() == page2
    # JSON carries the same cursor and the count of every matching run.
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--json", "--limit", "5")
    listing = json.loads(out)
    assert listing["matching"] == 7
    assert len(listing["runs"]) == 5
    assert listing["next"] is not None
    code, out, _ = cli(capsys, "--url", url, "runs", "list", "--json", "--limit", "0")
    everything = json.loads(out)
    assert len(everything["runs"]) == 7
    assert everything["next"] is None
    assert all(ISO_UTC.fullmatch(r["updated_at"]) for r in everything["runs"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "list", "--limit", "-1"], "-1 is negative"),
        (["runs", "list", "--status", "bogus"], "invalid choice: 'bogus'"),
        (["runs", "list", "--kind", "thread"], "invalid choice: 'thread'"),
        (["runs", "list", "--after", "yesterday"], "is not <updated_at>,<run id>"),
        (["stats", "--limit", "-5"], "-5 is negative"),
    ],
)
def test_bad_arguments_are_refused(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = cli(capsys, "--url", sqlite_url, *argv)
    assert code == 2  # a usage error, naming the argument
    assert message in err
    assert f"argument {next(a for a in argv if a.startswith('--'))}" in err
    assert out == ""


def test_timestamps_are_iso_utc_in_tables(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    sample = populate(url)
    code, out, _ = cli(capsys, "--url", url, "runs", "list")
    assert code == 0
    assert all(ISO_UTC.search(line) for line in out.splitlines()[2:])
    code, out, _ = cli(capsys, "--url", url, "runs", "show", str(sample.worker))
    for name in ("created", "updated", "heartbeat"):
        line = next(line for line in out.splitlines() if line.startswith(name + ":"))
        assert ISO_UTC.search(line), line


def test_positional_arguments_have_help(capsys: pytest.CaptureFixture[str]) -> None:
    commands = ("runs show", "runs diff", "export", "import", "fork", "delete", "prune", "stats")
    for argv in ([*command.split(), "--help"] for command in commands):
        code, out, _ = cli(capsys, *argv)
        assert code == 0
        positional = out.split("positional arguments:")[1].split("options:")[0]
        for line in positional.strip().splitlines():
            if line.startswith("  ") and not line.startswith("   "):
                assert len(line.split()) > 1, f"{argv}: {line!r} has no help"


def test_export_json_summary_and_transcripts(
    url: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    sample = populate(url)
    target = f"{tmp_path}/runs.jsonl"
    code, out, _ = cli(capsys, "--url", url, "export", "-o", target, "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["runs"] == 3
    assert summary["bytes"] > 0
    assert summary["format"] == "rows"

    code, out, _err = cli(capsys, "--url", url, "export", "--format", "transcript")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["run_id"] for line in lines] == [str(sample.conversation)]
    chat = lines[0]
    assert chat["agent_config"]["model"] == "llama-3-70b"
    messages = chat["messages"]
    assert messages[0]["role"] == "user"
    assistant = messages[1]
    assert assistant["role"] == "assistant"
    call = assistant["tool_calls"][0]
    assert call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Berlin", "turn": 1}
    result = messages[2]
    assert result == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": json.dumps({"temperature": 11}),
    }
    assert [m["role"] for m in messages].count("tool") == 12


def test_a_redacted_value_stays_redacted_in_the_transcript(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store.connect(url) as store:
        run = store.create_run(kind="conversation", config={"agent_config": {"model": "m"}})
        store.commit(
            run.run_id,
            {
                "version": 2,
                "conversation": [
                    {"role": "user", "content": "my card is [REDACTED:card]"},
                    {"role": "assistant", "content": "noted"},
                ],
            },
        )
    _code, out, _ = cli(capsys, "--url", url, "export", "--format", "transcript", str(run.run_id))
    (line,) = [json.loads(text) for text in out.splitlines()]
    assert line["messages"][0]["content"] == "my card is [REDACTED:card]"


def _long_conversation(url: str, turns: int) -> tuple[uuid.UUID, list[str]]:
    """A conversation archived several times, each turn with a tool result stored as a
    blob (carrying a secret the default redactors remove); its messages' contents."""
    options = ConversationOptions(archive_threshold=4096, blob_threshold=64)
    with Store.connect(url) as store:
        conversations = Conversations(store, options=options, redactors=DEFAULT_REDACTORS)
        conv = conversations.start(agent_id="long", agent_config={"model": "m"}, tools=["t"])
        for turn in range(turns):
            conv.add_user_message(f"question {turn} " + "q" * 200)
            call = conv.start_tool_call("t", {"turn": turn})
            result = {"turn": turn, "rows": ["r" * 40] * 4, "key": "AKIAIOSFODNN7EXAMPLE"}
            conv.finish_tool_call(call, result, duration_ms=1)
            conv.stream(f"answer {turn} " + "a" * 200)
            conv.complete_turn()
        every = conversations.all_messages(conv.conversation_id)
        assert len(every) > len(conv.state.conversation), "nothing was archived"
        return conv.conversation_id, [m.content for m in every]


def test_a_transcript_holds_the_archived_turns_and_the_blob_results(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation_id, contents = _long_conversation(url, 40)
    code, out, err = cli(capsys, "--url", url, "export", "--format", "transcript")
    assert code == 0, err
    (line,) = [json.loads(text) for text in out.splitlines()]
    assert line["run_id"] == str(conversation_id)
    messages = line["messages"]
    spoken = [m["content"] for m in messages if m["role"] != "tool"]
    assert spoken == contents, "the archived turns are missing or out of order"
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    assert [r["turn"] for r in results] == list(range(40))
    assert all(r["rows"] == ["r" * 40] * 4 for r in results)
    # Redacted before it was offloaded: the blob holds the redacted value.
    assert all("AKIA" not in r["key"] and "REDACTED" in r["key"] for r in results)
    ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(set(ids)) == 40, "call ids must stay unique across the archive"

    code, out, _ = cli(capsys, "--url", url, "export", "--format", "transcript", "--blobs", "ref")
    assert code == 0
    (line,) = [json.loads(text) for text in out.splitlines()]
    kept = [json.loads(m["content"]) for m in line["messages"] if m["role"] == "tool"]
    assert all(set(r) >= {"$blob", "size"} for r in kept)


def test_stats_costs_by_agent_model_and_day(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.connect(url) as store:
        for agent, model, tokens, cost in (
            ("planner", "llama-3-70b", 100, 0.25),
            ("planner", "llama-3-70b", 50, 0.5),
            ("planner", "gpt-x", 7, 0.125),
            ("coder", "llama-3-70b", 1, 1.0),
        ):
            run = store.create_run(
                agent_id=agent,
                kind="conversation",
                config={"agent_config": {"model": model}},
                metadata={
                    "input_tokens": tokens,
                    "output_tokens": 2 * tokens,
                    "cost_estimate_usd": cost,
                },
            )
            assert run.run_id
        store.create_run(agent_id="planner", metadata={"input_tokens": "lots"})
    code, out, _ = cli(capsys, "--url", url, "stats", "--costs", "--json")
    assert code == 0
    report = json.loads(out)
    rows = {(r["agent_id"], r["model"]): r for r in report["rows"]}
    assert rows[("planner", "llama-3-70b")]["runs"] == 2
    assert rows[("planner", "llama-3-70b")]["input_tokens"] == 150
    assert rows[("planner", "llama-3-70b")]["output_tokens"] == 300
    assert rows[("planner", "llama-3-70b")]["cost_usd"] == 0.75
    assert rows[("planner", "-")]["input_tokens"] == 0  # not a number: not counted
    assert report["total"]["cost_usd"] == 1.875
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", r["day"]) for r in report["rows"])
    code, out, _ = cli(capsys, "--url", url, "stats", "--costs", "--agent", "coder")
    assert out.splitlines()[0].split() == [
        "DAY",
        "AGENT",
        "MODEL",
        "RUNS",
        "INPUT",
        "TOKENS",
        "OUTPUT",
        "TOKENS",
        "COST",
        "USD",
    ]
    assert "coder" in out
    assert "planner" not in out


def test_retention_show_then_apply(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.integration.telemetry.test_retention import age

    with Store.connect(url) as store:
        old = store.create_run(agent_id="a")
        store.set_status(old.run_id, "completed")
        active = store.create_run(agent_id="a")
    age(url, old.run_id, 40)
    age(url, active.run_id, 400)
    code, out, _ = cli(capsys, "--url", url, "retention", "show", "--ended-after", "30d")
    assert code == 0
    assert "would delete 1 run(s) (1 ended)" in out
    code, out, _ = cli(capsys, "--url", url, "retention", "apply", "--ended-after", "30d", "--json")
    report = json.loads(out)["report"]
    assert report["runs_deleted"] == {"ended": 1}
    assert report["dry_run"] is False
    with Store.connect(url) as store:
        assert store.get_run(active.run_id).status == "active"
        with pytest.raises(LookupError):
            store.get_run(old.run_id)
    code, _, err = cli(capsys, "--url", url, "retention", "apply")
    assert code == 1
    assert "no retention rule" in err


def test_retention_policy_file_with_an_agent_override(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    from tests.integration.telemetry.test_retention import age

    with Store.connect(sqlite_url) as store:
        runs = {}
        for agent in ("keep-long", "other"):
            run = store.create_run(agent_id=agent)
            store.set_status(run.run_id, "completed")
            runs[agent] = run.run_id
    for run_id in runs.values():
        age(sqlite_url, run_id, 40)
    policy = f"{tmp_path}/retention.json"
    with open(policy, "w", encoding="utf-8") as out:
        json.dump(
            {"default": {"ended_days": 30}, "agents": {"keep-long": {"ended_days": 365}}}, out
        )
    code, out, _ = cli(capsys, "--url", sqlite_url, "retention", "apply", "--policy", policy)
    assert code == 0
    assert "deleted 1 run(s) (1 ended)" in out
    assert "keep-long" in out
    with Store.connect(sqlite_url) as store:
        assert store.get_run(runs["keep-long"]).agent_id == "keep-long"
    bad = f"{tmp_path}/bad.json"
    with open(bad, "w", encoding="utf-8") as out:
        json.dump({"default": {"ended_dayz": 30}}, out)
    code, _, err = cli(capsys, "--url", sqlite_url, "retention", "show", "--policy", bad)
    assert code == 1
    assert "unknown rule(s) ended_dayz" in err
    assert len(err.strip().splitlines()) == 1
