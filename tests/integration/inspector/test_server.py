"""The inspector over real HTTP: pages, escaping, offline assets, read-only, access rules."""

from __future__ import annotations

import re
import uuid

import pytest

from agentckpt.inspector import is_loopback, make_server
from tests.integration.inspector.conftest import Served, fetch, start_inspect, stop
from tests.support.sample_store import BIG_OUTPUT, SCRIPT, cli

# An asset the page would load: src/href/action attributes, CSS url() and @import.
REMOTE_ASSET = re.compile(
    r"""(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//)"""
    r"""|(?:url\(\s*["']?\s*(?:https?:)?//)|(?:@import\s+["']?(?:https?:)?//)""",
    re.IGNORECASE,
)


def pages(served: Served) -> dict[str, str]:
    rid = served.sample.conversation
    return {
        "index": served.base,
        "conversations": served.base + "?kind=conversation",
        "run": f"{served.base}runs/{rid}",
        "step": f"{served.base}runs/{rid}/steps/12",
        "diff": f"{served.base}runs/{rid}/diff?a=3&b=12",
        "default diff": f"{served.base}runs/{rid}/diff",
        "worker": f"{served.base}runs/{served.sample.worker}",
        "empty run": f"{served.base}runs/{served.sample.empty}",
    }


def test_every_page_renders(served: Served) -> None:
    for name, address in pages(served).items():
        reply = fetch(address)
        assert reply.status == 200, (name, reply.body[:500])
        assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in reply.headers["Content-Security-Policy"]
        assert reply.body.startswith("<!doctype html>")


def test_index_lists_runs_with_status_and_size(served: Served) -> None:
    body = fetch(served.base).body
    for rid in (served.sample.conversation, served.sample.worker, served.sample.empty):
        assert f'href="/runs/{rid}"' in body
    assert "completed" in body
    assert "<strong>3</strong> runs in this store" in body
    assert re.search(r"\d+(\.\d)? KB", body)
    only = fetch(served.base + "?kind=conversation").body
    assert str(served.sample.conversation) in only
    assert str(served.sample.worker) not in only


def test_run_page_shows_timeline_tool_calls_and_charts(served: Served) -> None:
    body = fetch(f"{served.base}runs/{served.sample.conversation}").body
    assert "Timeline (12 kept steps)" in body
    assert body.count('class="step"') == 12
    assert "get_weather" in body
    assert "Checking, turn 12." in body
    assert f"/runs/{served.sample.conversation}/blobs/{served.sample.blob_digest}" in body
    assert body.count("<svg") == 2
    assert body.count('<rect class="bar') == 12
    assert "snapshot" in body
    assert "delta" in body
    assert "llama-3-70b" in body  # config
    assert "user_abc123" in body  # metadata


def test_step_and_diff_pages(served: Served) -> None:
    rid = served.sample.conversation
    step = fetch(f"{served.base}runs/{rid}/steps/12").body
    assert "Messages (13)" in step
    assert "1180591620717411303424" in step  # 2**70, exact
    assert f'href="/runs/{rid}/steps/11"' in step
    diff = fetch(f"{served.base}runs/{rid}/diff?a=3&b=12").body
    assert "Diff: step 3 → step 12" in diff
    assert diff.count('<span class="op-add">add</span>') == 9
    assert "/conversation/-" in diff


def test_user_data_is_escaped(served: Served) -> None:
    for name, address in pages(served).items():
        body = fetch(address).body
        assert "<script" not in body.lower(), name
    step = fetch(f"{served.base}runs/{served.sample.conversation}/steps/12").body
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in step
    assert SCRIPT not in step


def test_no_page_loads_anything_from_the_network(served: Served) -> None:
    texts = [fetch(address).body for address in pages(served).values()]
    texts += [fetch(served.base + f"static/{name}").body for name in ("style.css",)]
    for text in texts:
        assert not REMOTE_ASSET.search(text), REMOTE_ASSET.search(text)
    # The pattern does catch what it is meant to catch.
    assert REMOTE_ASSET.search('<link href="https://cdn.example/x.css">')
    assert REMOTE_ASSET.search("background: url(//cdn.example/x.png)")


def test_static_files_and_blobs(served: Served) -> None:
    css = fetch(served.base + "static/style.css")
    assert css.status == 200
    assert css.headers["Content-Type"] == "text/css; charset=utf-8"
    assert fetch(served.base + "static/passwd").status == 404
    rid, digest = served.sample.conversation, served.sample.blob_digest
    blob = fetch(f"{served.base}runs/{rid}/blobs/{digest}")
    assert blob.status == 200
    assert blob.body.encode() == BIG_OUTPUT
    assert blob.headers["Content-Disposition"].startswith("attachment")
    assert fetch(f"{served.base}runs/{rid}/blobs/{'0' * 64}").status == 404


def test_errors_are_pages(served: Served) -> None:
    rid = served.sample.conversation
    missing = fetch(f"{served.base}runs/{uuid.uuid4()}")
    assert missing.status == 404
    assert "no run" in missing.body
    assert fetch(f"{served.base}runs/{rid}/steps/99").status == 404
    assert fetch(f"{served.base}runs/{rid}/diff?a=x&b=2").status == 400
    assert fetch(f"{served.base}nothing/here").status == 404
    # Step numbers past 64 bits are a bad request, not a dropped connection (they were
    # an OverflowError in the SQLite driver).
    huge = 10**30
    assert fetch(f"{served.base}runs/{rid}/steps/{huge}").status == 400
    assert fetch(f"{served.base}runs/{rid}/diff?a=1&b={huge}").status == 400
    # U+0000 in a filter was PostgreSQL's own error as a 503; it is a bad request on both.
    for name, field in (("agent", "agent_id"), ("q", "search"), ("status", "status")):
        refused = fetch(f"{served.base}?{name}=a%00b")
        assert refused.status == 400
        assert f"{field} &#39;a\\x00b&#39; contains U+0000" in refused.body


def test_read_only(served: Served) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        reply = fetch(served.base, method=method)
        assert reply.status == 405
        assert reply.headers["Allow"] == "GET, HEAD"


def test_other_host_names_are_refused_without_a_token(served: Served) -> None:
    # A page on another site that rebinds its DNS name to 127.0.0.1 sends its own Host.
    reply = fetch(served.base, headers={"Host": "attacker.example:80"})
    assert reply.status == 403
    assert fetch(served.base, headers={"Host": "localhost"}).status == 200


def test_is_loopback() -> None:
    for host in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"):
        assert is_loopback(host)
    for host in ("0.0.0.0", "192.168.1.5", "::", "example.com"):
        assert not is_loopback(host)


def test_make_server_refuses_other_addresses_without_token(sqlite_url: str) -> None:
    with pytest.raises(ValueError, match="without an access token"):
        make_server(None, host="0.0.0.0", port=0)  # type: ignore[arg-type]


def test_binding_elsewhere_needs_a_token(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, "--url", sqlite_url, "migrate")[0] == 0
    code, out, err = cli(capsys, "--url", sqlite_url, "inspect", "--host", "0.0.0.0")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "refusing to serve on 0.0.0.0 without an access token" in err
    code, _, err = cli(capsys, "--url", sqlite_url, "inspect", "--host", "0.0.0.0", "--token", "x")
    assert code == 2
    assert "at least 16 characters" in err


def test_with_a_token_every_request_needs_it(sqlite_url: str) -> None:
    token = "s3cret-token-0123456789"
    assert cli_migrate(sqlite_url)
    process = start_inspect(sqlite_url, "--host", "0.0.0.0", "--token", token)
    try:
        match = re.search(r"(http://127\.0\.0\.1:\d+/)\?token=(\S+)", process.line)
        assert match, process.line
        base = match[1]
        assert match[2] == token
        assert fetch(base).status == 401
        assert fetch(base + "static/style.css").status == 401
        assert fetch(base + "?token=wrong").status == 401
        assert fetch(base, headers={"Authorization": "Bearer wrong"}).status == 401
        assert fetch(base, headers={"Authorization": f"Bearer {token}"}).status == 200
        # The token in the address is moved into a cookie and out of the address bar.
        moved = fetch(base + f"?kind=run&token={token}")
        assert moved.status == 303
        assert moved.headers["Location"] == "/?kind=run"
        cookie = moved.headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in moved.headers["Set-Cookie"]
        assert fetch(base, headers={"Cookie": cookie}).status == 200
        # With a token any Host name may be used (the token is the protection).
        assert fetch(base, headers={"Cookie": cookie, "Host": "box.lan:80"}).status == 200
    finally:
        stop(process)


def cli_migrate(url: str) -> bool:
    from agentckpt.cli import main

    return main(["--url", url, "migrate", "--json"]) == 0


def test_counts_match_the_filter(served: Served) -> None:
    body = fetch(served.base + "?status=active&agent=planner").body
    assert "<strong>1</strong> of 3 runs match" in body
    assert body.count('<tr>\n  <td><a class="mono" href="/runs/') == 1
    assert f'href="/runs/{served.sample.conversation}"' in body
    completed = fetch(served.base + "?status=completed").body
    assert "<strong>1</strong> of 3 runs match" in completed
    assert f'href="/runs/{served.sample.worker}"' in completed


def test_text_blobs_download_as_text(served: Served) -> None:
    rid, digest = served.sample.conversation, served.sample.blob_digest
    blob = fetch(f"{served.base}runs/{rid}/blobs/{digest}")
    assert blob.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert blob.headers["Content-Disposition"] == f'attachment; filename="{digest[:16]}.txt"'
    run = fetch(f"{served.base}runs/{rid}").body
    assert "weather report line" in run  # shown inline on the run's page


def test_without_jinja2_the_inspector_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from agentckpt.errors import ConfigurationError
    from agentckpt.inspector import render

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jinja2" else real(name, *a)
    )
    with pytest.raises(ConfigurationError, match=r"pip install 'agentckpt\[inspector\]'"):
        render.require()
