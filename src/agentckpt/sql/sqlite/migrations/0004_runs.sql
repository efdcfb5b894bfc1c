-- Long runs: recovery workers look for active runs whose lease has expired. The index
-- keeps that poll cheap however many finished runs the table holds.

CREATE INDEX runs_status_lease ON runs (status, lease_expires_at);
