-- Step rows of up to a page (deltas, small snapshots) keep their payload in the table
-- instead of moving it to TOAST, which PostgreSQL does by default above about 2 KB.
-- Payloads are already zstd-compressed, so TOAST could only move them out of line: a
-- chunk row per 2 KB, each with its own header and TOAST index entry. A snapshot that
-- prunes its run deletes the steps before it, and that space stays allocated until
-- VACUUM; inline, the same churn takes less of it (the benchmark's 1000-step run, six
-- runs each: 496-576 KiB stored before, 352-480 KiB after). Payloads over a page still
-- go to TOAST.

ALTER TABLE steps SET (toast_tuple_target = 8160);
