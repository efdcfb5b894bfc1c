"""The run loop's named queries (leases, effects, audit, blob gc): ``sql/<dialect>/runs.sql``.

Code refers to a query only through these constants; a test checks that each one
exists in every dialect.
"""

from __future__ import annotations

from typing import Final

ACQUIRE_LEASE: Final = "runs_acquire_lease"
LEASE_HOLDER: Final = "runs_lease_holder"
RENEW_LEASE: Final = "runs_renew_lease"
RELEASE_LEASE: Final = "runs_release_lease"
FINISH: Final = "runs_finish"
CLAIM_ORPHANS: Final = "runs_claim_orphans"
GET_EFFECT: Final = "runs_get_effect"
INSERT_EFFECT: Final = "runs_insert_effect"
PRUNE_EFFECTS: Final = "runs_prune_effects"
INSERT_EVENT: Final = "runs_insert_event"
LIST_EVENTS: Final = "runs_list_events"
GC_RUN_PAGE: Final = "runs_gc_run_page"
GC_RUN_PAYLOADS: Final = "runs_gc_run_payloads"
GC_DELETE_BLOBS: Final = "runs_gc_delete_blobs"
