"""A writer for the lost-update tests: one of several processes racing on one run.

    python tests/contract/racer.py URL RUN_ID OP COUNT

``OP`` is ``append`` (append the same item COUNT times) or ``pop`` (pop items until the
list is empty). Each operation reads the run's head, changes the state and commits it as
the next step; a :class:`StaleHeadError` means another writer moved the run first, so the
operation reads again. Prints one JSON line: the items this process popped (pop) or how
many appends it committed (append).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from agentckpt import StaleHeadError, Store


def race(store: Any, run_id: str, op: str, count: int) -> list[Any]:
    """Run ``count`` appends, or pops until empty; returns what each committed operation did."""
    done: list[Any] = []
    while len(done) < count if op == "append" else True:
        checkpoint = store.resume(run_id)
        items = list(checkpoint.state["items"])
        if op == "pop":
            if not items:
                return done
            effect: Any = items.pop()
        else:
            items.append("same")
            effect = "same"
        try:
            store.commit(run_id, {"items": items})
        except StaleHeadError:
            continue
        done.append(effect)
    return done


def main() -> None:
    url, run_id, op, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with Store.connect(url, migrate=False) as store:
        print(json.dumps(race(store, run_id, op, count)), flush=True)


if __name__ == "__main__":
    main()
