"""The sealed-value format and the keyring, without a database (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentckpt import ConfigurationError, CorruptDataError, KeyUnavailableError
from agentckpt.crypto import AES_256_GCM, CHACHA20_POLY1305, Keyring, StaticKeys, new_key
from agentckpt.crypto.keyring import new_data_key
from agentckpt.crypto.providers import parse_keys
from agentckpt.crypto.sealed import read_header
from agentckpt.crypto.sealing import KINDS, Sealing


def keyring(cipher=AES_256_GCM):  # type: ignore[no-untyped-def]
    provider = StaticKeys({"kek": new_key()})
    ring = Keyring(provider, cipher, [])
    key, plain = new_data_key(provider, cipher)
    ring.add(key, plain)
    return ring


RINGS = {c.name: keyring(c) for c in (AES_256_GCM, CHACHA20_POLY1305)}


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=2000),
    kind=st.sampled_from(KINDS),
    cipher=st.sampled_from(sorted(RINGS)),
    flip=st.integers(min_value=0),
)
def test_round_trip_and_any_flipped_bit_is_refused(
    data: bytes, kind: str, cipher: str, flip: int
) -> None:
    ring = RINGS[cipher]
    sealed = ring.seal(kind, data)
    header = read_header(sealed, where="t")
    assert header.key_id == ring.active
    assert header.cipher.name == cipher
    assert ring.open(kind, sealed, run_id=None, where="t") == data
    bit = flip % (len(sealed) * 8)
    changed = bytearray(sealed)
    changed[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptDataError):
        ring.open(kind, bytes(changed), run_id=None, where="t")


@given(kind=st.sampled_from(KINDS), other=st.sampled_from(KINDS))
def test_a_value_cannot_move_to_another_kind_of_column(kind: str, other: str) -> None:
    ring = RINGS["aes-256-gcm"]
    sealed = ring.seal(kind, b"value")
    if other == kind:
        assert ring.open(other, sealed, run_id=None, where="t") == b"value"
    else:
        with pytest.raises(CorruptDataError):
            ring.open(other, sealed, run_id=None, where="t")


def test_each_seal_uses_a_fresh_nonce() -> None:
    ring = RINGS["aes-256-gcm"]
    assert len({ring.seal("step", b"same") for _ in range(100)}) == 100


def test_reprs_never_show_key_material() -> None:
    kek = new_key()
    provider = StaticKeys({"kek": kek})
    ring = Keyring(provider, AES_256_GCM, [])
    key, plain = new_data_key(provider, AES_256_GCM)
    ring.add(key, plain)
    ring.seal("step", b"x")
    text = repr(provider) + repr(ring) + repr(Sealing(ring)) + repr(key)
    for secret in (kek, plain, key.wrapped):
        assert repr(secret) not in text
        assert secret.hex() not in text


def test_a_provider_names_the_missing_kek() -> None:
    provider = StaticKeys({"kek-a": new_key()})
    with pytest.raises(KeyUnavailableError, match="kek-b") as caught:
        provider.unwrap("kek-b", b"\0" * 60, b"ctx")
    assert caught.value.key_id == "kek-b"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment",
        "no-colon",
        "k:not base64!",
        "k:c2hvcnQ=",
        "k:" + "A" * 44 + ",k:" + "A" * 44,
    ],
)
def test_bad_key_text_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ConfigurationError, match="encryption"):
        parse_keys(text, source="test")


def test_encryption_settings_are_checked() -> None:
    from agentckpt import Encryption

    with pytest.raises(ConfigurationError, match="key provider"):
        Encryption(keys=b"\0" * 32)  # type: ignore[arg-type]
    from agentckpt.crypto.ciphers import cipher_named

    with pytest.raises(ConfigurationError, match="unknown cipher"):
        cipher_named("aes-128-ecb")
