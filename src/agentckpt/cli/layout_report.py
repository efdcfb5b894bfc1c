"""``agentckpt doctor``'s report of how a PostgreSQL store is laid out: the Citus nodes,
shard counts and whether every table is distributed and co-located with ``runs``; or
its hash partitions."""

from __future__ import annotations

from typing import Any

from agentckpt.cli.durability import Finding


def assess_layout(state: dict[str, Any]) -> list[Finding]:
    """Findings for what :meth:`PostgresBackend.layout_state` describes."""
    if state["mode"] == "partitions":
        counts = sorted(set(state["partitions"].values()))
        value = f"{len(state['partitions'])} tables, {'/'.join(map(str, counts))} each"
        return [Finding("hash partitions", value, "info")]
    if state["mode"] != "citus":
        return []
    return [_nodes(state["nodes"]), *_tables(state)]


def _nodes(nodes: list[dict[str, Any]]) -> Finding:
    workers = [n for n in nodes if not n["coordinator"]]
    down = [f"{n['nodename']}:{n['nodeport']}" for n in workers if not n["isactive"]]
    value = ", ".join(
        f"{'coordinator' if n['coordinator'] else 'worker'} {n['nodename']}:{n['nodeport']}"
        + ("" if n["isactive"] else " (inactive)")
        for n in nodes
    )
    if not workers:
        return Finding("Citus nodes", value or "none", "fail", "add workers: citus_add_node()")
    if down:
        return Finding(
            "Citus nodes", value, "fail", f"inactive workers {', '.join(down)}: activate them"
        )
    return Finding("Citus nodes", value, "ok")


def _tables(state: dict[str, Any]) -> list[Finding]:
    tables = {t["name"]: t for t in state["tables"]}
    anchor = tables.get("runs", {})
    wrong = []
    for name in state["run_tables"]:
        table = tables[name]
        if table["method"] != "h" or table["colocation"] != anchor.get("colocation"):
            wrong.append(name)
    local = [n for n, t in tables.items() if n not in state["run_tables"] and t["method"] != "n"]
    shards = sorted({t["shards"] for n, t in tables.items() if n in state["run_tables"]})
    findings = [
        Finding("Citus shards", f"{'/'.join(map(str, shards)) or 0} per distributed table", "info")
    ]
    if wrong or local:
        advice = (
            "run agentckpt migrate (distribute=auto), or by hand: "
            "create_distributed_table('<table>', 'run_id', colocate_with => 'runs') and "
            "create_reference_table('schema_migrations')"
        )
        value = "; ".join(
            part
            for part in (
                f"not distributed by run_id with runs: {', '.join(wrong)}" if wrong else "",
                f"not reference tables: {', '.join(local)}" if local else "",
            )
            if part
        )
        findings.append(Finding("Citus distribution", value, "fail", advice))
    else:
        findings.append(
            Finding(
                "Citus distribution",
                f"{len(state['run_tables'])} tables by run_id, co-located with runs; "
                f"{len(tables) - len(state['run_tables'])} reference",
                "ok",
            )
        )
    return findings
