"""``agentckpt keys status|rotate [--reencrypt]``: the data keys of an encrypted store.

The key provider is ``--keys env:NAME`` or ``--keys file:PATH``, else the store URL's
``encryption=`` setting. Nothing here ever prints key material: data keys appear by id,
with the id of the KEK that wraps them, their cipher, state and how many values use them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentckpt.cli.command import Subparsers, positive_int


def register(
    sub: Subparsers, common: argparse.ArgumentParser, listing: argparse.ArgumentParser
) -> None:
    """Add ``keys``."""
    cmd = sub.add_parser(
        "keys",
        help="encryption at rest: data keys in use, key rotation",
        description="The store's data keys (by id, never their material) and rotation.",
    )
    keys_sub = cmd.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    provider = argparse.ArgumentParser(add_help=False)
    provider.add_argument(
        "--keys",
        metavar="SPEC",
        help="the key provider: env:VARIABLE or file:PATH (default: the URL's encryption=)",
    )
    status = keys_sub.add_parser(
        "status",
        parents=[common, listing, provider],
        help="data keys, the KEK wrapping each, and how many values use each",
        description="Every data key with its KEK id, cipher, state and the values sealed "
        "under it (counted from the values' headers; no key is needed). With a key "
        "provider, also whether it holds each KEK.",
    )
    status.set_defaults(func=run_status)
    rotate = keys_sub.add_parser(
        "rotate",
        parents=[common, provider],
        help="re-wrap data keys under the current KEK; --reencrypt rewrites every value",
        description="Re-wraps every data key under the provider's current KEK (the first "
        "key it lists); no payload is rewritten. With --reencrypt, also moves every sealed "
        "value to a new data key and retires the old ones. Safe to kill and run again: "
        "it carries on where it stopped, and no value is ever half-written.",
    )
    rotate.add_argument(
        "--reencrypt", action="store_true", help="rewrite every value under a new data key"
    )
    rotate.add_argument(
        "--batch", type=positive_int, default=500, help="rows per page (default 500)"
    )
    rotate.set_defaults(func=run_rotate)


def _open(args: argparse.Namespace, *, need_keys: bool) -> Any:
    from agentckpt.cli.target import open_store, require_schema, store_url
    from agentckpt.crypto.settings import take_settings
    from agentckpt.errors import ConfigurationError
    from agentckpt.store.store import Store

    url = store_url(args)
    spec = getattr(args, "keys", None)
    if spec is None:
        if need_keys and take_settings(url, {})[1] is None:
            raise ConfigurationError(
                "agentckpt keys rotate needs the key provider: --keys env:VARIABLE or "
                "--keys file:PATH (or encryption= in the store URL)"
            )
        return open_store(url)
    store = Store.connect(url, migrate=False, encryption=spec)
    try:
        require_schema(store)
    except BaseException:
        store.close()
        raise
    return store


def run_status(args: argparse.Namespace) -> int:
    """Print the data keys in use."""
    from agentckpt.cli.output import print_fields, print_json, print_table
    from agentckpt.store.keys import KeyTable
    from agentckpt.store.rotation import describe_keys, key_usage

    with _open(args, need_keys=False) as store:
        keys = KeyTable(store.backend).load()
        described = describe_keys(keys, key_usage(store))
        provider = store.sealing.keyring.provider if store.sealing.keyring else None
    current = provider.current_key_id() if provider is not None else None
    for entry in described:
        entry["kek_held"] = None if provider is None else _holds(provider, entry["kek"])
    in_use = sorted({e["kek"] for e in described if e["state"] != "retired"})
    if args.json:
        print_json({"current_kek": current, "keks_in_use": in_use, "data_keys": described})
        return 0
    print_fields(
        [
            ("current KEK", current or "(no key provider given)"),
            ("KEKs in use", ", ".join(in_use) or "(none: the store is not encrypted)"),
        ]
    )
    print_table(
        ["data key", "KEK", "cipher", "state", "values", "KEK held"],
        [
            [
                e["data_key"],
                e["kek"],
                e["cipher"],
                e["state"],
                e["values"],
                "?" if e["kek_held"] is None else ("yes" if e["kek_held"] else "NO"),
            ]
            for e in described
        ],
    )
    return 0


def _holds(provider: Any, kek_id: str) -> bool:
    ids = getattr(provider, "key_ids", None)
    return kek_id in ids() if callable(ids) else kek_id == provider.current_key_id()


def run_rotate(args: argparse.Namespace) -> int:
    """Re-wrap the data keys and, with --reencrypt, rewrite every value."""
    from agentckpt.store.rotation import rotate

    def progress(table: str, scanned: int, resealed: int) -> None:
        print(f"{table}: {scanned} scanned, {resealed} re-encrypted", file=sys.stderr, flush=True)

    with _open(args, need_keys=True) as store:
        report = rotate(store, reencrypt=args.reencrypt, batch=args.batch, progress=progress)
    for key_id, old in report.rewrapped:
        print(f"re-wrapped data key {key_id} (was under KEK {old})")
    if not report.rewrapped:
        print("every data key is already wrapped by the current KEK")
    if report.target is not None:
        total = sum(report.resealed.values())
        print(f"re-encrypted {total} values under data key {report.target}")
        for key_id in report.retired:
            print(f"retired data key {key_id}")
        for key_id, left in report.still_in_use.items():
            print(
                f"data key {key_id} still seals {left} values (written meanwhile by a process "
                "opened before the rotation); run it again once writers have restarted"
            )
        if report.still_in_use:
            return 1
    return 0
