"""Blobs in S3-compatible object storage (AWS S3, MinIO, Ceph, R2, ...) through boto3.

Needs the ``s3`` extra: ``pip install 'agentckpt[s3]'``. Objects are keyed
``<prefix><run_id>/<sha256>``; their URIs are ``s3://<bucket>/<key>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

from agentckpt.blobstores.base import StoredBlob
from agentckpt.errors import ConfigurationError, NotFoundError, StoreError, UnavailableError

__all__ = ["S3BlobStore"]

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


def _translate(exc: Exception, what: str) -> Exception:
    from botocore.exceptions import (  # type: ignore[import-untyped]
        ClientError,
        ConnectionError,
        HTTPClientError,
    )

    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in _MISSING:
            return NotFoundError(f"S3 blob store: {what}: no such object")
        if code in ("SlowDown", "ServiceUnavailable", "RequestTimeout", "InternalError", "503"):
            return UnavailableError(f"S3 blob store: {what}: {code}; retry later")
        return StoreError(f"S3 blob store: {what}: {code}: {exc}")
    if isinstance(exc, ConnectionError | HTTPClientError):
        return UnavailableError(f"S3 blob store: {what}: cannot reach the endpoint: {exc}")
    return StoreError(f"S3 blob store: {what}: {exc}")


class S3BlobStore:
    """Blobs as objects in one bucket, under an optional key prefix.

    ``put`` returns once S3 has acknowledged the object, which S3 and compatible
    stores do only after it is durably stored. Pass a ready boto3 ``client`` or the
    options to build one (``endpoint_url``, ``region_name``, credentials, ...).
    Modification times and :meth:`now` come from the object store's clock.

    Example::

        S3BlobStore("agent-artifacts", prefix="prod/", endpoint_url="http://minio:9000")
    """

    def __init__(
        self, bucket: str, *, prefix: str = "", client: Any = None, **client_options: Any
    ) -> None:
        if not bucket:
            raise ConfigurationError("S3BlobStore needs a bucket name")
        if client is None:
            try:
                import boto3  # type: ignore[import-untyped]
            except ImportError as exc:
                raise ConfigurationError(
                    "S3BlobStore needs boto3: pip install 'agentckpt[s3]'"
                ) from exc
            client = boto3.client("s3", **client_options)
        self.bucket = bucket
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self.client = client

    def _key(self, run_id: UUID, digest: str) -> str:
        return f"{self.prefix}{run_id}/{digest}"

    def uri_for(self, run_id: UUID, digest: str) -> str:
        """``s3://`` URI of the blob."""
        return f"s3://{self.bucket}/{self._key(run_id, digest)}"

    def _key_of(self, uri: str) -> str:
        parts = urlsplit(uri)
        key = parts.path.lstrip("/")
        if parts.scheme != "s3" or parts.netloc != self.bucket or not key.startswith(self.prefix):
            raise ConfigurationError(
                f"blob URI {uri!r} is not in this blob store (s3://{self.bucket}/{self.prefix})"
            )
        return key

    def put(self, run_id: UUID, digest: str, data: bytes) -> str:
        """Upload the blob; an existing object is overwritten, which refreshes its time."""
        key = self._key(run_id, digest)
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except Exception as exc:
            raise _translate(exc, f"put {key}") from exc
        return f"s3://{self.bucket}/{key}"

    def get(self, uri: str) -> bytes:
        """The stored bytes of the object at ``uri``."""
        key = self._key_of(uri)
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            data: bytes = response["Body"].read()
        except Exception as exc:
            raise _translate(exc, f"get {key}") from exc
        return data

    def list(self, run_id: UUID | None = None) -> Iterator[StoredBlob]:
        """Every object under the prefix (of one run, or of all runs)."""
        prefix = self.prefix + (f"{run_id}/" if run_id is not None else "")
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    owner, _, digest = obj["Key"][len(self.prefix) :].partition("/")
                    try:
                        owner_id = UUID(owner)
                    except ValueError:
                        continue  # not one of ours
                    yield StoredBlob(
                        uri=f"s3://{self.bucket}/{obj['Key']}",
                        run_id=owner_id,
                        digest=digest,
                        stored_bytes=int(obj["Size"]),
                        modified_at=obj["LastModified"],
                    )
        except StoreError:
            raise
        except Exception as exc:
            raise _translate(exc, f"list {prefix}") from exc

    def delete(self, uri: str, *, unless_modified_after: datetime) -> bool:
        """Delete the object unless it was modified after the cutoff; True if deleted."""
        key = self._key_of(uri)
        try:
            # Re-check right before deleting: a writer may have re-put it since listing.
            head = self.client.head_object(Bucket=self.bucket, Key=key)
            if head["LastModified"] > unless_modified_after:
                return False
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            error = _translate(exc, f"delete {key}")
            if isinstance(error, NotFoundError):
                return False
            raise error from exc
        return True

    def now(self) -> datetime:
        """The object store's clock (the ``Date`` of a cheap request), so that comparisons
        with ``LastModified`` do not depend on this machine's clock."""
        try:
            response = self.client.list_objects_v2(
                Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1
            )
        except Exception as exc:
            raise _translate(exc, "read the clock") from exc
        date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        if not date:
            return datetime.now(UTC)
        return parsedate_to_datetime(date)
