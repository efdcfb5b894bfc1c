"""Blob stores outside the database for large values of run states.

The database is the default blob store (pass ``blobs=None``); these keep blobs
elsewhere:

- :class:`LocalBlobStore`: files in a directory, written crash-safely.
- :class:`S3BlobStore`: S3-compatible object storage (the ``s3`` extra, boto3).

Any object with the methods of :class:`BlobStore` works too.
"""

from __future__ import annotations

from agentckpt.blobstores.base import BlobStore, StoredBlob
from agentckpt.blobstores.local import LocalBlobStore
from agentckpt.blobstores.s3 import S3BlobStore

__all__ = ["BlobStore", "LocalBlobStore", "S3BlobStore", "StoredBlob"]
