"""Deterministic filler: words, sentences and JSON tool results of a chosen size.

Agent traffic is mostly text and JSON, which compresses; random bytes would not, and
would make every compressing store look worse than it is in practice. The vocabulary is
built once from a fixed seed (so its statistics never depend on ``--seed``) and words are
drawn with a Zipf-like weighting, which gives prose about the compression ratio of real
English text.
"""

from __future__ import annotations

import random
from itertools import accumulate
from typing import Any

__all__ = ["TextSource"]

_SYLLABLES = [
    "ka",
    "re",
    "mo",
    "ti",
    "na",
    "lu",
    "se",
    "do",
    "vi",
    "ra",
    "po",
    "ne",
    "mi",
    "sa",
    "to",
    "ru",
    "la",
    "ge",
    "fi",
    "ko",
    "an",
    "el",
    "or",
    "is",
    "un",
    "at",
    "en",
    "ir",
    "ol",
    "us",
    "ber",
    "gan",
    "tor",
    "mel",
    "ven",
    "dor",
    "sal",
    "pin",
]
_VOCABULARY_SIZE = 2000
_TOOL_KEYS = ("title", "url", "snippet", "score", "id", "author", "updated")


def _vocabulary() -> list[str]:
    rng = random.Random(20240601)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < _VOCABULARY_SIZE:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


_WORDS = _vocabulary()
# Zipf-like: the n-th word is drawn with weight 1/n, as in natural language.
_CUMULATIVE = list(accumulate(1.0 / rank for rank in range(1, _VOCABULARY_SIZE + 1)))


class TextSource:
    """Text and JSON values drawn from one seeded random stream."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def words(self, count: int) -> list[str]:
        """``count`` words, Zipf-weighted."""
        return self.rng.choices(_WORDS, cum_weights=_CUMULATIVE, k=max(count, 1))

    def text(self, size: int) -> str:
        """Prose of about ``size`` characters (at least one word)."""
        # Words average about 6.5 characters with their separating space.
        words = self.words(max(size // 6, 1))
        out = " ".join(words)
        return out[:size] if len(out) > size else out

    def sentence(self, low: int, high: int) -> str:
        """A sentence of ``low`` to ``high`` characters."""
        text = self.text(self.rng.randint(low, high))
        return text[:1].upper() + text[1:] + "."

    def tool_result(self, tool: str, size: int) -> Any:
        """A JSON tool result of about ``size`` bytes once encoded; its shape follows the tool."""
        rng = self.rng
        if tool in ("search_web", "search_docs"):
            results = []
            used = 40
            while used < size:
                record = {
                    "title": self.sentence(20, 60),
                    "url": f"https://example.org/{'/'.join(self.words(3))}",
                    "snippet": self.text(min(max(size - used - 120, 40), 400)),
                    "score": round(rng.random(), 4),
                }
                used += sum(len(str(v)) for v in record.values()) + 50
                results.append(record)
            return {"query": " ".join(self.words(4)), "results": results}
        if tool == "run_sql":
            columns = ["id", "name", "amount", "region", "updated"]
            rows: list[list[Any]] = []
            used = 60
            while used < size:
                row = [
                    rng.randrange(1_000_000),
                    " ".join(self.words(2)),
                    round(rng.uniform(0, 10_000), 2),
                    rng.choice(("eu-west", "us-east", "ap-south", "sa-east")),
                    f"2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
                ]
                used += 60
                rows.append(row)
            return {"columns": columns, "rows": rows, "row_count": len(rows)}
        if tool in ("read_file", "fetch_url"):
            return {
                "path": "/".join(self.words(3)) + ".md",
                "content": self.text(max(size - 60, 10)),
                "truncated": False,
            }
        # Small structured answers (weather, calculator, email, calendar...).
        answer: dict[str, Any] = {"ok": True, "tool": tool}
        keys = iter(_TOOL_KEYS * (size // 40 + 1))
        used = 30
        index = 0
        while used < size:
            key = f"{next(keys)}_{index}"
            value: Any = self.text(min(max(size - used - len(key) - 6, 4), 120))
            answer[key] = value
            used += len(key) + len(value) + 6
            index += 1
        return answer
