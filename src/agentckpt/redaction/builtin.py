"""The built-in redactors: provider API keys, tokens, private keys, passwords in URLs,
emails, phone numbers and card numbers (Luhn-checked). Each is a :class:`PatternRedactor`;
the patterns favour missing an odd format over redacting ordinary text (near misses
such as dates, version numbers, ``user@localhost`` or a 16-digit number failing the Luhn
check stay as they are; tests/integration/redaction holds the corpus)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_REDACTORS",
    "PII_REDACTORS",
    "SECRET_REDACTORS",
    "PatternRedactor",
    "luhn_valid",
    "placeholder",
]


def placeholder(kind: str) -> str:
    """The text that replaces a redacted value: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"


def luhn_valid(digits: str) -> bool:
    """True if ``digits`` (digits only) passes the Luhn checksum card numbers carry."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


@dataclass(frozen=True, slots=True)
class PatternRedactor:
    """Replaces every match of ``pattern`` with ``[REDACTED:<kind>]``.

    When the pattern has a group named ``v``, only that group is replaced (the password
    of a URL, the token after ``Bearer``). ``check``, if given, must accept the matched
    value too (the Luhn check of card numbers).
    """

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None

    def __call__(self, text: str) -> str:
        """``text`` with each accepted match replaced."""
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        whole = match.group(0)
        has_group = "v" in self.pattern.groupindex
        value = match.group("v") if has_group else whole
        if value is None or (self.check is not None and not self.check(value)):
            return whole
        if not has_group:
            return placeholder(self.kind)
        start, end = match.start("v") - match.start(), match.end("v") - match.start()
        return whole[:start] + placeholder(self.kind) + whole[end:]


def _p(kind: str, pattern: str, check: Callable[[str], bool] | None = None) -> PatternRedactor:
    return PatternRedactor(kind, re.compile(pattern), check)


# Order matters: a more specific pattern runs before one that would also match
# (an Anthropic key starts with "sk-", as OpenAI's do); a placeholder never matches again.
SECRET_REDACTORS: tuple[PatternRedactor, ...] = (
    _p(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?"
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    ),
    _p("anthropic_key", r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}"),
    _p("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    _p("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    _p(
        "aws_secret_key",
        r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    _p("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    _p("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    _p("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    _p("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    _p("bearer_token", r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{16,})"),
    _p("url_password", r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]+:(?P<v>[^\s/@]+)@"),
)
PII_REDACTORS: tuple[PatternRedactor, ...] = (
    _p("email", r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b"),
    _p("card_number", r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])", _card),
    _p(
        "phone",
        r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{3}\)\s?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-])"
        r"|(?<![\w+])\+[1-9]\d{9,14}(?!\w)",
    ),
)
DEFAULT_REDACTORS: tuple[PatternRedactor, ...] = SECRET_REDACTORS + PII_REDACTORS
