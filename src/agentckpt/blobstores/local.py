"""Blobs as files in a local (or mounted) directory: ``<root>/<run_id>/<sha256>``."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit
from uuid import UUID

from agentckpt.blobstores.base import StoredBlob
from agentckpt.errors import ConfigurationError, NotFoundError, StorageFullError, StoreError

__all__ = ["LocalBlobStore"]

_TEMP_PREFIX = ".tmp-"


def _error(exc: OSError, what: str) -> Exception:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFullError(f"blob store: {what}: {exc.strerror}; free disk space")
    return StoreError(f"blob store: {what}: {exc}")


def _fsync_dir(path: Path) -> None:
    # A rename or a new directory entry is durable only once its directory is synced.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalBlobStore:
    """Blobs in a directory, written crash-safely.

    A put writes a temp file in the run's directory, fsyncs it, renames it into place
    and fsyncs the directory, so after a crash a blob is either whole or absent (a temp
    file may be left behind; garbage collection removes it after its grace period).
    Modification times come from this machine's clock.

    Example::

        AgentRun(store, run_id, blobs=LocalBlobStore("/var/lib/agent/blobs"))
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"cannot use {self.root} as a blob directory: {exc}") from exc

    def _path(self, run_id: UUID, digest: str) -> Path:
        return self.root / str(run_id) / digest

    def uri_for(self, run_id: UUID, digest: str) -> str:
        """``file://`` URI of the blob."""
        return self._path(run_id, digest).as_uri()

    def _from_uri(self, uri: str) -> Path:
        parts = urlsplit(uri)
        path = Path(unquote(parts.path)).resolve()
        if parts.scheme != "file" or path.parent.parent != self.root:
            raise ConfigurationError(f"blob URI {uri!r} is not in this blob store ({self.root})")
        return path

    def put(self, run_id: UUID, digest: str, data: bytes) -> str:
        """Write the blob durably, or refresh the modification time of the existing copy."""
        path = self._path(run_id, digest)
        try:
            # Content-addressed: an existing file already holds these bytes (it only ever
            # appears by an atomic rename of a synced file). Refreshing its time keeps a
            # collector from removing a blob that is about to be referenced again.
            os.utime(path)
            return path.as_uri()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _error(exc, f"refresh {path}") from exc
        try:
            fresh_dir = not path.parent.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            if fresh_dir:
                _fsync_dir(self.root)
            temp = path.parent / f"{_TEMP_PREFIX}{uuid.uuid4().hex}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
            _fsync_dir(path.parent)
        except OSError as exc:
            raise _error(exc, f"write {path}") from exc
        return path.as_uri()

    def get(self, uri: str) -> bytes:
        """The stored bytes of the blob at ``uri``."""
        path = self._from_uri(uri)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"blob {uri} does not exist") from None
        except OSError as exc:
            raise _error(exc, f"read {path}") from exc

    def list(self, run_id: UUID | None = None) -> Iterator[StoredBlob]:
        """Every blob file (and leftover temp file) of one run or of all runs."""
        dirs = [self.root / str(run_id)] if run_id is not None else sorted(self.root.iterdir())
        for directory in dirs:
            try:
                owner = UUID(directory.name)
                entries = sorted(directory.iterdir())
            except (ValueError, NotADirectoryError, FileNotFoundError):
                continue  # not a run directory, or one removed meanwhile
            for entry in entries:
                try:
                    stat = entry.stat()
                except FileNotFoundError:
                    continue
                temp = entry.name.startswith(_TEMP_PREFIX)
                yield StoredBlob(
                    uri=entry.as_uri(),
                    run_id=owner,
                    digest="" if temp else entry.name,
                    stored_bytes=stat.st_size,
                    modified_at=datetime.fromtimestamp(stat.st_mtime, UTC),
                )

    def delete(self, uri: str, *, unless_modified_after: datetime) -> bool:
        """Remove the file unless it was modified after the cutoff; True if removed."""
        path = self._from_uri(uri)
        try:
            # Re-check right before unlinking: a writer may have refreshed it since the
            # collector listed it.
            modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            if modified > unless_modified_after:
                return False
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise _error(exc, f"delete {path}") from exc
        # The run's directory stays even when empty: removing it could race a put that
        # has just created it and is about to write its temp file there.
        return True

    def now(self) -> datetime:
        """This machine's clock, which stamps the files' modification times."""
        return datetime.now(UTC)
