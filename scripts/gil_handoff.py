"""What the GIL costs a SQLite batch on a worker thread while another thread runs Python.

Usage::

    python scripts/gil_handoff.py [--rows 50] [--synchronous FULL|NORMAL] [--busy]

Inserts batches of ``--rows`` step-like rows (1.2 KB payloads) in one transaction from
this thread, three ways: a statement a row (``execute``), ``executemany``, and one
multi-row ``INSERT``; with ``--busy`` a second thread runs a pure-Python loop meanwhile,
as the event loop does while the SQLite worker commits a group. Every statement lets
the GIL go around ``sqlite3_step`` and must take it back after; with the other thread
running Python, each of those takes waits for it to give the GIL up (its eval loop's
switch request), so a batch's wall grows with its number of statements, not its work.
Prints the median wall of a batch, in ms, in each of three rounds per way.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

WAYS = ("execute", "executemany", "one statement")


def main() -> None:
    """Run the rounds; print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL")
    parser.add_argument("--busy", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentckpt-gil-") as directory:
        conn = sqlite3.connect(
            str(Path(directory) / "gil.db"), isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={args.synchronous}")
        conn.execute(
            "CREATE TABLE steps (run_id TEXT, step INT, payload BLOB, PRIMARY KEY (run_id, step))"
        )
        payload = os.urandom(1200)
        one = "INSERT INTO steps VALUES " + ",".join(["(?, ?, ?)"] * args.rows)
        stop = threading.Event()

        def python_loop() -> None:
            total = 0
            while not stop.is_set():
                for i in range(1000):
                    total += i

        def batch(way: str, step: int) -> None:
            rows = [(f"run{i}", step, payload) for i in range(args.rows)]
            conn.execute("BEGIN IMMEDIATE")
            if way == "execute":
                for row in rows:
                    conn.execute("INSERT INTO steps VALUES (?, ?, ?)", row)
            elif way == "executemany":
                conn.executemany("INSERT INTO steps VALUES (?, ?, ?)", rows)
            else:
                conn.execute(one, [value for row in rows for value in row])
            conn.execute("COMMIT")

        other = threading.Thread(target=python_loop) if args.busy else None
        if other is not None:
            other.start()
        medians: dict[str, list[float]] = {way: [] for way in WAYS}
        step = 0
        try:
            for _ in range(3):
                for way in WAYS:
                    walls = []
                    for _ in range(20):
                        step += 1
                        start = time.perf_counter()
                        batch(way, step)
                        walls.append(time.perf_counter() - start)
                    medians[way].append(statistics.median(walls) * 1e3)
        finally:
            stop.set()
            if other is not None:
                other.join()
            conn.close()
    for way in WAYS:
        rounds = ", ".join(f"{m:.2f}" for m in medians[way])
        print(f"{way}: {rounds} ms a batch of {args.rows} rows")


if __name__ == "__main__":
    main()
