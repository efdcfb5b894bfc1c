"""How a store is told to encrypt: ``Store.connect(url, encryption=...)`` or the URL.

The keyword takes an :class:`Encryption`, a :class:`KeyProvider`, or the same text as
the URL setting. The URL settings (taken out of the URL before it reaches the driver):

- ``encryption=env:NAME`` (KEKs in environment variable ``NAME``) or
  ``encryption=file:/path/to/keys`` (a key file); see :mod:`agentckpt.crypto.providers`;
- ``encrypt_metadata=true`` also seals run metadata values;
- ``cipher=aes-256-gcm`` (default) or ``cipher=chacha20-poly1305`` for new data keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

from agentckpt.crypto.ciphers import DEFAULT_CIPHER, Cipher, cipher_named
from agentckpt.crypto.providers import KeyProvider, env_keys, file_keys
from agentckpt.errors import ConfigurationError

SETTINGS = ("encryption", "encrypt_metadata", "cipher")


@dataclass(frozen=True, kw_only=True, slots=True)
class Encryption:
    """Encryption at rest for one store.

    ``keys``: the provider of key-encryption keys. ``metadata``: also seal run metadata
    values (keys stay in clear and queryable). ``cipher``: the AEAD of new data keys.

    Example::

        Store.connect(url, encryption=Encryption(keys=env_keys("AGENTCKPT_KEYS")))
    """

    keys: KeyProvider
    metadata: bool = False
    cipher: Cipher = field(default=DEFAULT_CIPHER)

    def __post_init__(self) -> None:
        if not isinstance(self.keys, KeyProvider):
            raise ConfigurationError(
                "Encryption(keys=...) must be a key provider (current_key_id, wrap, unwrap), "
                f"not {type(self.keys).__name__}"
            )
        if not isinstance(self.cipher, Cipher):
            raise ConfigurationError(
                f"Encryption(cipher=...) must be a Cipher, not {type(self.cipher).__name__}"
            )


def provider_from_text(text: str) -> KeyProvider:
    """``env:NAME`` or ``file:/path``: the built-in provider it names."""
    scheme, sep, rest = text.partition(":")
    if sep and scheme == "env" and rest:
        return env_keys(rest)
    if sep and scheme == "file" and rest:
        return file_keys(rest)
    raise ConfigurationError(f"setting encryption={text!r} must be env:<variable> or file:<path>")


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.lower() in ("true", "1", "yes")
    raise ConfigurationError(f"setting {name}={value!r} must be true or false")


def split_settings(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its encryption settings, and those settings as text."""
    base, sep, query = url.partition("?")
    found: dict[str, str] = {}
    kept = []
    for part in query.split("&") if sep else []:
        key = unquote_plus(part.partition("=")[0])
        if key in SETTINGS:
            found[key] = dict(parse_qsl(part, keep_blank_values=True)).get(key, "")
        elif part:
            kept.append(part)
    return base + ("?" + "&".join(kept) if kept else ""), found


def take_settings(url: str, keywords: dict[str, Any]) -> tuple[str, Encryption | None]:
    """The URL without the encryption settings, and the :class:`Encryption` they (and
    the keywords, which win and are removed from ``keywords``) describe."""
    if not isinstance(url, str):
        return url, None
    url, in_url = split_settings(url)
    found: dict[str, Any] = dict(in_url)
    for name in SETTINGS:
        if name in keywords:
            found[name] = keywords.pop(name)
    given = found.get("encryption")
    if given is None:
        if set(found) - {"encryption"}:
            raise ConfigurationError(
                f"setting {sorted(found)[0]} needs encryption= (a key provider) too"
            )
        return url, None
    metadata = (
        _flag("encrypt_metadata", found["encrypt_metadata"])
        if "encrypt_metadata" in found
        else None
    )
    cipher = cipher_named(found["cipher"]) if "cipher" in found else None
    if isinstance(given, Encryption):
        encryption = given
    elif isinstance(given, str):
        encryption = Encryption(keys=provider_from_text(given))
    elif isinstance(given, KeyProvider):
        encryption = Encryption(keys=given)
    else:
        raise ConfigurationError(
            f"setting encryption must be an Encryption, a KeyProvider or env:/file: text, "
            f"not {type(given).__name__}"
        )
    return url, Encryption(
        keys=encryption.keys,
        metadata=encryption.metadata if metadata is None else metadata,
        cipher=encryption.cipher if cipher is None else cipher,
    )
