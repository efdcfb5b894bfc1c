"""Write tokens: drawn from the OS many at a time, never handed out twice, in this
process or in a child forked from it while the parent still had some left."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from agentckpt._core.writes import TOKEN_BYTES, new_token


def test_tokens_are_random_bytes_never_handed_out_twice() -> None:
    tokens = [new_token() for _ in range(2000)]
    assert {len(t) for t in tokens} == {TOKEN_BYTES}
    assert len(set(tokens)) == len(tokens)


def test_threads_drawing_at_once_get_distinct_tokens() -> None:
    drawn: list[list[bytes]] = [[] for _ in range(4)]

    def draw(mine: list[bytes]) -> None:
        mine.extend(new_token() for _ in range(1000))

    threads = [threading.Thread(target=draw, args=(mine,)) for mine in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [t for mine in drawn for t in mine]
    assert len(set(every)) == len(every) == 4000


@pytest.mark.skipif(sys.platform == "win32", reason="no fork")
def test_a_forked_child_does_not_reuse_the_parents_tokens() -> None:
    new_token()  # the parent holds tokens it has not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, b"".join(new_token() for _ in range(10)))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = b"".join(new_token() for _ in range(10))
    assert len(child) == len(parent) == 10 * TOKEN_BYTES
    child_tokens = {child[i : i + TOKEN_BYTES] for i in range(0, len(child), TOKEN_BYTES)}
    parent_tokens = {parent[i : i + TOKEN_BYTES] for i in range(0, len(parent), TOKEN_BYTES)}
    assert not child_tokens & parent_tokens
