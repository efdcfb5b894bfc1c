"""The encryption tests' fixtures: the S3 server of the run-loop tests."""

from __future__ import annotations

from tests.integration.runs.conftest import s3_endpoint, s3_store

__all__ = ["s3_endpoint", "s3_store"]
