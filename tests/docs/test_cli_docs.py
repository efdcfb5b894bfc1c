"""Every ``bash`` block of docs/cli.md and docs/inspector.md runs as written, in order."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentckpt.cli.doctor import filesystem_type
from agentckpt.cli.durability import NETWORK_FILESYSTEMS, RAM_FILESYSTEMS

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def bash_blocks(name: str) -> list[str]:
    return BLOCK.findall((DOCS / name).read_text(encoding="utf-8"))


@pytest.mark.crash
@pytest.mark.parametrize("name", ["cli.md", "inspector.md"])
def test_doc_commands_work_when_pasted(name: str, tmp_path: Path) -> None:
    blocks = bash_blocks(name)
    assert blocks, f"docs/{name} has no bash block"
    if filesystem_type(tmp_path) in RAM_FILESYSTEMS | NETWORK_FILESYSTEMS:
        pytest.skip("the temporary directory is not on a local disk: `doctor` would fail")
    shims = tmp_path / "bin"
    shims.mkdir()
    for command, module in (("agentckpt", "-m agentckpt"), ("python", "")):
        shim = shims / command
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {module} "$@"\n')
        shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCKPT_")}
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    script = "set -euo pipefail\n" + "\n".join(blocks)
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr
