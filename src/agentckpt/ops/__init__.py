"""What the operator tools share: views of a store, the export format, units.

The command line (``agentckpt``) and the web inspector both build on this room and on
the store; neither imports the other. Everything here reads through the store and the
named queries of ``sql/<dialect>/ops.sql`` (:mod:`agentckpt.ops.queries`).
"""
