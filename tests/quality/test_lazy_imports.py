"""Importing agentckpt, or its integrations package, imports no agent framework."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

FRAMEWORKS = ("langgraph", "langchain_core", "agents", "openai")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_importing_agentckpt_and_integrations_loads_no_framework() -> None:
    done = run_python(
        f"""
        import sys
        import agentckpt, agentckpt.integrations
        print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "framework", "extra"),
    [("AgentckptSaver", "langgraph", "langgraph"), ("AgentckptSession", "agents", "openai-agents")],
)
def test_a_missing_framework_names_the_extra_to_install(
    name: str, framework: str, extra: str
) -> None:
    done = run_python(
        f"""
        import sys
        sys.modules[{framework!r}] = None  # as if it were not installed
        from agentckpt import integrations
        try:
            getattr(integrations, {name!r})
        except ModuleNotFoundError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install 'agentckpt[{extra}]'" in done.stdout


@pytest.mark.parametrize(
    ("name", "framework"), [("AgentckptSaver", "langgraph"), ("AgentckptSession", "agents")]
)
def test_an_adapter_loads_its_framework_on_first_use(name: str, framework: str) -> None:
    pytest.importorskip(framework, reason=f"{framework} is not installed")
    done = run_python(
        f"""
        import sys
        from agentckpt import integrations
        assert {framework!r} not in sys.modules
        adapter = getattr(integrations, {name!r})
        print(adapter.__name__, {framework!r} in sys.modules)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name, "True"]
