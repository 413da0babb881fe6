"""Recorded runs: read back as the events the live hook saw (``recording``), replayed with virtual stops
(``replay``), and compared over several agents (``compare``, with the statistics of ``metaeval``)."""
