"""A server process run under the keeper (``_keeper.py``): signal it, freeze it, kill it.

The keeper is this process's child and the server is the keeper's child, so waiting for
the keeper means the server *and every process it forked* have exited and been reaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import _keeper
from .binaries import RunAs

KEEPER = Path(_keeper.__file__)


class ProcessError(RuntimeError):
    """A supervised process did not start or stop as asked."""


class Supervised:
    """One long-running program (a postmaster, a pgbouncer) with its whole process tree.

    ``pid`` is the program's own pid; its output (stdout and stderr) is appended to
    ``log_path``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        run_as: RunAs,
        log_path: Path,
        pid_file: Path,
        cwd: Path,
        env: Mapping[str, str],
        private_ipc: bool = False,
    ) -> None:
        pid_file.unlink(missing_ok=True)
        keeper_argv = [sys.executable, str(KEEPER), "--pid-file", str(pid_file)]
        if run_as.switches:
            keeper_argv += ["--uid", str(run_as.uid), "--gid", str(run_as.gid)]
        if private_ipc:
            keeper_argv.append("--private-ipc")
        self.argv = list(argv)
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.keeper = subprocess.Popen(
                [*keeper_argv, "--", *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env),
                # Its own session: a Ctrl-C in the terminal reaches pytest, whose teardown
                # stops the server in order, not the server directly.
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while not pid_file.exists():
            if self.keeper.poll() is not None or time.monotonic() > deadline:
                self.kill_tree()
                raise ProcessError(f"keeper for {argv[0]} did not start; see {log_path}")
            time.sleep(0.01)
        self.pid = int(pid_file.read_text())

    def __repr__(self) -> str:
        return f"<Supervised {Path(self.argv[0]).name} pid={self.pid}>"

    @property
    def running(self) -> bool:
        """True until the program and all its children have exited."""
        return self.keeper.poll() is None

    @property
    def returncode(self) -> int | None:
        """The program's exit code (128 + signal number if killed), once it is gone."""
        return self.keeper.poll()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the program itself (not its children)."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def tree(self) -> list[int]:
        """The program and every live process below it, the program first."""
        if not self.running:
            return []
        return _keeper.descendants(self.keeper.pid)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until everything has exited; its exit code, or None on timeout."""
        try:
            return self.keeper.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def freeze(self) -> list[int]:
        """SIGSTOP the program first (so it forks nothing new), then all its children.

        Returns the stopped pids once the kernel reports each one stopped.
        """
        self.signal(signal.SIGSTOP)
        frozen: set[int] = set()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pids = self.tree()
            for pid in pids:
                if pid not in frozen:
                    _send(pid, signal.SIGSTOP)
                    frozen.add(pid)
            states = [_keeper.state(pid) for pid in pids]
            if all(s is None or s[0] in "Tt" for s in states):
                return pids
            time.sleep(0.01)
        raise ProcessError(f"{self!r}: processes did not stop within 5 s")

    def thaw(self) -> None:
        """SIGCONT everything :meth:`freeze` stopped; the children before the program."""
        for pid in reversed(self.tree()):
            _send(pid, signal.SIGCONT)

    def kill_tree(self, timeout: float = 10) -> None:
        """SIGKILL the program, then every process below it, and wait until all are gone."""
        if self.keeper.poll() is None:
            try:
                pids = _keeper.descendants(self.keeper.pid)
            except OSError:
                pids = []
            if pids and pids[0] != self.pid:
                pids.insert(0, self.pid)
            for pid in pids:
                _send(pid, signal.SIGKILL)
        if self.wait(timeout) is None:
            self.keeper.kill()  # the keeper itself hangs: do not leave it unreaped
            self.keeper.wait()
            raise ProcessError(f"{self!r}: processes still alive {timeout} s after SIGKILL")

    def stop(self, sig: int, timeout: float) -> int:
        """Send ``sig`` and wait; SIGKILL everything if it has not exited by ``timeout``."""
        self.thaw()  # a stopped process would not act on sig
        self.signal(sig)
        code = self.wait(timeout)
        if code is None:
            self.kill_tree()
            raise ProcessError(f"{self!r} ignored signal {sig} for {timeout} s; killed it")
        return code


def _send(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
