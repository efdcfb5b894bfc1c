"""Encrypted values in export files (:mod:`agentckpt.ops.exchange`).

An export copies rows exactly, so sealed values stay sealed; the file then also carries
the store's data keys as ``data_key`` lines (each wrapped by its KEK, never in clear),
and an import into a store whose provider holds the same KEKs adds them to its
``data_keys`` and reads every value, byte for byte. ``--decrypt`` instead opens every
value as it is written out, leaving a clear export with no data key lines.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from uuid import UUID

from agentckpt.crypto.ciphers import CIPHERS
from agentckpt.crypto.keyring import ACTIVE, RETIRED, RETIRING, DataKey
from agentckpt.crypto.sealed import KEY_ID
from agentckpt.crypto.sealing import BLOB, EFFECT, HISTORY, STEP, Sealing, is_sealed_codec

# The export line types whose rows hold a sealed column: (kind of value, column).
SEALED_LINES = {
    "step": (STEP, "payload"),
    "blob": (BLOB, "data"),
    "history": (HISTORY, "payload"),
    "effect": (EFFECT, "payload"),
}
DATA_KEY_FIELDS = ("cipher", "kek_id", "key_id", "state", "wrapped")


def data_key_line(key: DataKey) -> dict[str, Any]:
    """The ``row`` of a ``data_key`` line: ids, cipher, state and the wrapped key."""
    return {
        "cipher": key.cipher,
        "kek_id": key.kek_id,
        "key_id": key.key_id,
        "state": key.state,
        "wrapped": base64.b64encode(key.wrapped).decode("ascii"),
    }


def data_key_from_line(row: Any) -> DataKey:
    """A ``data_key`` line's row, checked; ``ValueError`` says what is wrong."""
    if not isinstance(row, dict) or set(row) != set(DATA_KEY_FIELDS):
        raise ValueError(f"a data_key row has exactly the fields {', '.join(DATA_KEY_FIELDS)}")
    for name in ("key_id", "kek_id"):
        if not isinstance(row[name], str) or not KEY_ID.match(row[name]):
            raise ValueError(f"field {name}: not a key id")
    if row["cipher"] not in CIPHERS:
        raise ValueError(f"field cipher: unknown cipher {row['cipher']!r}")
    if row["state"] not in (ACTIVE, RETIRING, RETIRED):
        raise ValueError(f"field state: unknown state {row['state']!r}")
    try:
        wrapped = base64.b64decode(row["wrapped"], validate=True)
    except (binascii.Error, TypeError):
        raise ValueError("field wrapped: not base64") from None
    # Imported as retired keys of the source are kept as records; the others are readable.
    return DataKey(row["key_id"], row["kek_id"], row["cipher"], wrapped, row["state"])


def open_line_row(
    sealing: Sealing, line_type: str, row: dict[str, Any], run_id: UUID
) -> dict[str, Any]:
    """A child row with its sealed column opened (as the clear store would hold it)."""
    sealed = SEALED_LINES.get(line_type)
    if sealed is None or not is_sealed_codec(str(row.get("codec", ""))):
        return row
    kind, column = sealed
    return sealing.open_rows(kind, [row], run_id=run_id, column=column)[0]


def open_run_row(sealing: Sealing, row: dict[str, Any]) -> dict[str, Any]:
    """A ``runs`` row with its config and metadata values opened."""
    return sealing.open_run_rows([row])[0]
