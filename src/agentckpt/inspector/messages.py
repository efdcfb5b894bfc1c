"""Render the messages and tool calls found in a state, whatever the agent's format.

A state's messages are ``state["conversation"]`` (the conversation format) or
``state["messages"]``. Tool calls may be in the conversation format (``tool_name``,
``arguments``, ``result``), OpenAI's (``function.name``, ``function.arguments``) or
Anthropic's content blocks (``type: tool_use``, ``name``, ``input``).
"""

from __future__ import annotations

from typing import Any

from agentckpt.inspector.markup import css_class, esc, json_html, pretty_json, scalar, value_html

_SHOWN = frozenset({"role", "content", "tool_calls", "name"})


def messages_of(state: Any) -> list[Any] | None:
    """The state's message list, or None if it has none."""
    if not isinstance(state, dict):
        return None
    for key in ("conversation", "messages"):
        value = state.get(key)
        if isinstance(value, list):
            return value
    return None


def _tool_call(run_id: Any, call: Any) -> str:
    if not isinstance(call, dict):
        return f'<div class="tool-call">{pretty_json(call)}</div>'
    function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
    name = call.get("tool_name") or call.get("name") or function.get("name") or "tool"
    arguments = call.get("arguments", call.get("input", function.get("arguments")))
    rest = {
        k: v
        for k, v in call.items()
        if k not in {"tool_name", "name", "function", "arguments", "input", "result"}
    }
    parts = [
        f'<div class="tool-call"><span class="tool-name">{esc(name)}</span>',
        _inline_fields(rest),
    ]
    if arguments is not None:
        parts.append(value_html(run_id, arguments))
    if "result" in call:
        parts.append('<div class="note">result</div>' + value_html(run_id, call["result"]))
    nested = {k: v for k, v in rest.items() if not scalar(v)}
    if nested:
        parts.append(json_html(nested))
    parts.append("</div>")
    return "".join(parts)


def _inline_fields(fields: dict[str, Any]) -> str:
    """Short scalar fields (ids, timestamps) as quiet ``key value`` pairs on one line."""
    return "".join(
        f' <span class="field"><span class="key">{esc(k)}</span> {esc(v)}</span>'
        for k, v in fields.items()
        if scalar(v)
    )


def message_html(run_id: Any, index: int, message: Any) -> str:
    """One message: role, content, tool calls, and any other fields as JSON."""
    if not isinstance(message, dict):
        return f'<div class="msg"><span class="idx">#{index}</span>{pretty_json(message)}</div>'
    role = message.get("role", "message")
    name = f" · {esc(message['name'])}" if message.get("name") else ""
    rest = {k: v for k, v in message.items() if k not in _SHOWN}
    parts = [
        f'<div class="msg role-{css_class(role)}">',
        f'<div class="msg-head"><span class="role">{esc(role)}</span>{name} '
        f'<span class="idx">#{index}</span>{_inline_fields(rest)}</div>',
    ]
    content = message.get("content")
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_use" for block in content
    ):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                parts.append(_tool_call(run_id, block))
            else:
                parts.append(value_html(run_id, block))
    elif content is not None:
        parts.append(value_html(run_id, content))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        parts.extend(_tool_call(run_id, call) for call in calls)
    nested = {k: v for k, v in rest.items() if not scalar(v)}
    if nested:
        parts.append(f"<details><summary>more fields</summary>{pretty_json(nested)}</details>")
    parts.append("</div>")
    return "".join(parts)


def messages_html(run_id: Any, messages: list[Any], *, start: int = 0) -> str:
    """Consecutive messages numbered from ``start``."""
    return "".join(message_html(run_id, start + i, m) for i, m in enumerate(messages))
