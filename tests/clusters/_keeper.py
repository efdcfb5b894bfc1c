"""Run one server process under a small keeper that reaps it and everything it orphans.

Run as a script (``python _keeper.py [options] -- command...``), never imported by the
tests: :mod:`tests.clusters.processes` starts it. Why a keeper instead of starting the
server directly:

- PID 1 on these machines does not reap orphans. When a test SIGKILLs a postmaster its
  backends are orphaned, and they would stay zombies for good. The keeper is a *child
  subreaper* (``PR_SET_CHILD_SUBREAPER``): orphans are re-parented to it and it reaps
  them, so when the keeper exits every process of the server has gone. Waiting for the
  keeper is how the tests know a killed server is really dead.
- If the test run itself dies (SIGKILL, OOM), the keeper notices that its parent changed
  and SIGKILLs the whole process tree, so no server outlives its test run by more than
  about half a second.
- As root it can give the server a private SysV IPC namespace (``--private-ipc``): shared
  memory that a SIGKILLed postmaster leaves behind is then freed by the kernel when the
  last process of the namespace exits, instead of leaking.

It drops to ``--uid``/``--gid`` (with that user's groups) in the child only, so it can
always read this file and signal the server. It writes the child's pid to ``--pid-file``
and exits with the child's exit code (128 + signal number when it was killed).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import pwd
import signal
import sys
import threading
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWIPC = 0x08000000


def state(pid: int) -> tuple[str, int] | None:
    """``(state letter, parent pid)`` of a process from /proc, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _child_map() -> dict[int, list[int]]:
    """Parent pid -> live (non-zombie) children, from one pass over /proc."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = state(int(entry))
            if info is not None and info[0] != "Z":
                kids.setdefault(info[1], []).append(int(entry))
    return kids


def children(pid: int) -> list[int]:
    """Live (non-zombie) children of ``pid``."""
    return _child_map().get(pid, [])


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents before children."""
    kids = _child_map()
    out: list[int] = []
    todo = [pid]
    while todo:
        found = kids.get(todo.pop(0), [])
        out.extend(found)
        todo.extend(found)
    return out


def _kill_tree() -> None:
    # SIGKILL works on stopped (SIGSTOPped) processes too, so a frozen server goes as well.
    for pid in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            _kill_tree()
            return


def _libc_call(name: str, *args: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="_keeper.py")
    parser.add_argument("--uid", type=int)
    parser.add_argument("--gid", type=int)
    parser.add_argument("--private-ipc", action="store_true")
    parser.add_argument("--pid-file", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")

    _libc_call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if args.private_ipc:
        _libc_call("unshare", CLONE_NEWIPC)
    parent = os.getppid()

    child = os.fork()
    if child == 0:  # pragma: no cover - replaced by exec
        try:
            if args.uid is not None and args.uid != os.geteuid():
                gid = args.gid if args.gid is not None else os.getegid()
                os.initgroups(pwd.getpwuid(args.uid).pw_name, gid)
                os.setgid(gid)
                os.setuid(args.uid)
            os.execvp(command[0], command)
        except BaseException as exc:
            print(f"keeper: cannot run {command[0]}: {exc}", file=sys.stderr, flush=True)
        os._exit(127)

    tmp = f"{args.pid_file}.tmp"
    Path(tmp).write_text(f"{child}\n")
    os.replace(tmp, args.pid_file)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()

    code = 0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # nothing left: the server and all its orphans are gone
            break
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
