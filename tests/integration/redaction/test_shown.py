"""What was redacted, and whose runs they are, as the command line and the inspector show
it: paths and kinds, never a value; a tenant's runs only."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from agentckpt import Conversations, Store
from agentckpt.inspector.pages import View, index, run_page
from agentckpt.redaction import DEFAULT_REDACTORS
from tests.support.sample_store import cli


def _conversation(url: str, tenant: str, secret: str) -> uuid.UUID:
    with Store.connect(url, tenant=tenant) as store:
        conversations = Conversations(store, redactors=DEFAULT_REDACTORS)
        conv = conversations.start(agent_id=f"bot-{tenant}", agent_config={"model": "m"}, tools=[])
        conv.add_user_message(f"my key is {secret}")
        conv.add_assistant_message("ok")
        return conv.conversation_id


def test_the_inspector_shows_redactions_and_the_tenant(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shown.db'}"
    secret = f"sk-proj-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    mine = _conversation(url, "acme", secret)
    theirs = _conversation(url, "globex", secret)
    with Store.connect(url, tenant="acme", migrate=False) as store:
        view = View(store=store, label="test")
        page = run_page(view, str(mine))
        assert "Redacted (1)" in page
        assert "/conversation/0/content" in page
        assert "openai_key" in page
        assert "acme" in page
        assert secret not in page
        listing = index(view, {})
        assert str(mine) in listing
        assert str(theirs) not in listing


def test_the_command_line_works_on_one_tenant(tmp_path: Path, capsys: Any) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    secret = f"sk-proj-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    mine = _conversation(url, "acme", secret)
    theirs = _conversation(url, "globex", secret)
    code, out, _ = cli(capsys, "runs", "list", "--url", url, "--tenant", "acme")
    assert code == 0
    assert str(mine) in out
    assert str(theirs) not in out
    code, out, _ = cli(capsys, "--tenant", "globex", "runs", "show", str(theirs), "--url", url)
    assert code == 0
    assert "globex" in out
    assert "openai_key" in out
    assert secret not in out
    code, _, err = cli(capsys, "runs", "show", str(theirs), "--url", url, "--tenant", "acme")
    assert code != 0
    assert "no run" in err
    code, _, err = cli(capsys, "runs", "list", "--url", url, "--tenant", "bad name")
    assert code != 0
    assert "not a valid name" in err
