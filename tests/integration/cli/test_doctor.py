"""``agentckpt doctor``: the rules (pure) and the real settings of both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentckpt.cli.doctor import filesystem_type
from agentckpt.cli.durability import assess_postgres, assess_sqlite
from tests.support.sample_store import cli

GOOD_PG = {
    "synchronous_commit": "on",
    "fsync": "on",
    "full_page_writes": "on",
    "synchronous_standby_names": "ANY 1 (replica_a)",
    "data_checksums": "on",
    "in_recovery": False,
    "replicas": 1,
    "sync_replicas": 1,
    "autovacuum": "on",
}


def statuses(findings: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {f.check: f.status for f in findings}


def test_postgres_rules() -> None:
    assert set(statuses(assess_postgres(GOOD_PG)).values()) == {"ok"}
    cases = [
        ({"synchronous_commit": "off"}, "synchronous_commit", "fail", "synchronous_commit = on"),
        ({"synchronous_commit": "local"}, "synchronous_commit", "fail", "failover"),
        ({"fsync": "off"}, "fsync", "fail", "fsync = on"),
        ({"full_page_writes": "off"}, "full_page_writes", "fail", "full_page_writes = on"),
        ({"sync_replicas": 0}, "synchronous_standby_names", "fail", "every commit waits"),
        (
            {"synchronous_standby_names": "", "sync_replicas": 0},
            "synchronous_standby_names",
            "fail",
            "asynchronous",
        ),
        (
            {"synchronous_standby_names": "", "replicas": 0, "sync_replicas": 0},
            "replication",
            "warn",
            "back up",
        ),
        ({"in_recovery": True}, "server role", "fail", "primary"),
        ({"data_checksums": "off"}, "data_checksums", "info", "pg_checksums"),
        ({"autovacuum": "off"}, "autovacuum", "warn", "autovacuum = on"),
    ]
    for change, check, status, advice in cases:
        findings = {f.check: f for f in assess_postgres(GOOD_PG | change)}
        assert findings[check].status == status, change
        assert advice in findings[check].advice, change


def test_the_failover_verdict_fails_for_every_setting_that_can_lose_acknowledged_commits() -> None:
    def verdict(change: dict) -> tuple[str, str]:  # type: ignore[type-arg]
        finding = {f.check: f for f in assess_postgres(GOOD_PG | change)}["failover"]
        return finding.status, finding.value

    assert verdict({}) == ("ok", "lossless: a synchronous standby confirms every commit")
    lossy = [
        {"fsync": "off"},
        {"synchronous_commit": "off"},
        {"synchronous_commit": "local"},
        {"synchronous_standby_names": "", "sync_replicas": 0},
    ]
    for change in lossy:
        assert verdict(change) == ("fail", "acknowledged commits can be lost"), change
    assert verdict({"synchronous_commit": "remote_write"})[0] == "warn"
    assert verdict({"synchronous_standby_names": "", "replicas": 0, "sync_replicas": 0}) == (
        "warn",
        "no standby to fail over to",
    )
    # A role that cannot see the standbys' state gets told how to let doctor see it.
    hidden = {f.check: f for f in assess_postgres(GOOD_PG | {"replicas_hidden": 1})}
    assert hidden["failover"].status == "warn"
    assert "pg_monitor" in hidden["synchronous_standby_names"].advice


def test_each_standby_is_reported() -> None:
    standbys = [
        {"application_name": "b", "state": "streaming", "sync_state": "sync",
         "flush_behind_bytes": 0},
        {"application_name": "c", "state": "catchup", "sync_state": "async",
         "flush_behind_bytes": 4096},
    ]  # fmt: skip
    findings = {f.check: f for f in assess_postgres(GOOD_PG, standbys)}
    assert findings["standby b"].status == "ok"
    assert findings["standby b"].value == "streaming, sync, 0 bytes not yet flushed there"
    assert findings["standby c"].status == "warn"


def test_sqlite_rules() -> None:
    good = {"journal_mode": "wal", "synchronous": 2}
    kwargs = {"path": "/data/a.db", "fs_type": "ext4", "free_bytes": 10**11, "writable": True}
    assert set(statuses(assess_sqlite(good, **kwargs)).values()) == {"ok"}  # type: ignore[arg-type]
    bad = [
        ({"journal_mode": "delete"}, {}, "journal_mode", "fail"),
        ({"synchronous": 1}, {}, "synchronous", "fail"),
        ({}, {"fs_type": "tmpfs"}, "location", "fail"),
        ({}, {"fs_type": "nfs4"}, "location", "fail"),
        ({}, {"fs_type": "overlay"}, "location", "warn"),
        ({}, {"writable": False}, "permissions", "fail"),
        ({}, {"free_bytes": 10**6}, "free disk", "warn"),
        ({}, {"path": None}, "location", "fail"),
    ]
    for settings, where, check, status in bad:
        found = statuses(assess_sqlite(good | settings, **(kwargs | where)))  # type: ignore[arg-type]
        assert found[check] == status, (settings, where)


def test_filesystem_type_uses_the_longest_mount_point(tmp_path: Path) -> None:
    mounts = "\n".join(
        [
            "/dev/sda1 / ext4 rw 0 0",
            "tmpfs /dev/shm tmpfs rw 0 0",
            "server:/export /mnt/my\\040share nfs4 rw 0 0",
        ]
    )
    assert filesystem_type(Path("/dev/shm/x/agent.db"), mounts) == "tmpfs"
    assert filesystem_type(Path("/mnt/my share/agent.db"), mounts) == "nfs4"
    assert filesystem_type(Path("/mnt/myshare2/agent.db"), mounts) == "ext4"
    assert filesystem_type(Path("/var/agent.db"), mounts) == "ext4"


def test_doctor_on_a_sqlite_file(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "--url", sqlite_url, "migrate")[0] == 0
    code, out, _ = cli(capsys, "--url", sqlite_url, "doctor", "--json")
    report = json.loads(out)
    checks = {f["check"]: f for f in report["findings"]}
    # The library's own connection: WAL and synchronous=FULL, as it sets them.
    assert checks["journal_mode"]["value"] == "wal"
    assert checks["synchronous"]["value"] == "FULL"
    assert code == (0 if report["ok"] else 1)
    code, out, _ = cli(capsys, "--url", sqlite_url, "doctor")
    assert out.startswith("agentckpt doctor: sqlite store\n")


def test_doctor_fails_for_a_file_in_ram(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if filesystem_type(shm) != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm on this machine")
    folder = shm / tmp_path.name
    folder.mkdir()
    url = f"sqlite:///{folder}/agent.db"
    try:
        assert cli(capsys, "--url", url, "migrate")[0] == 0
        code, out, _ = cli(capsys, "--url", url, "doctor")
        assert code == 1
        assert "FAIL" in out
        assert "lost at reboot" in out
    finally:
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


@pytest.mark.postgres
def test_doctor_reads_the_real_postgres_settings(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(capsys, "--url", pg_url, "migrate")[0] == 0
    code, out, _ = cli(capsys, "--url", pg_url, "doctor", "--json")
    report = json.loads(out)
    checks = {f["check"]: f for f in report["findings"]}
    for name in ("synchronous_commit", "fsync", "full_page_writes", "data_checksums"):
        assert checks[name]["value"] in ("on", "off", "local", "remote_write", "remote_apply")
    assert "replication" in checks or "synchronous_standby_names" in checks
    assert code == (0 if report["ok"] else 1)
    code, out, _ = cli(capsys, "--url", pg_url, "doctor", "--strict")
    warned = any(f["status"] in ("warn", "fail") for f in report["findings"])
    assert code == (1 if warned else 0)
