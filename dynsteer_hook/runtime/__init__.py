"""During a rollout: the execution-time evaluator and its parts (paper §3.3-3.4).

``evaluator`` runs Algorithm 1 on the dual ``clock`` (with call/result ``pairing``), over
the blueprint's look-ups (``index``): ``interception`` (with ``screening``) intercepts
minefields on every raw event; on every closed action ``settlement`` (with ``matching``)
settles milestones, ``windows`` bound each stage's evidence and ``stages`` judges it, ``grounding`` and
``identifiers`` tell what the agent was shown, the judge ``ladder`` judges stages and
``policy`` adapts weights and tiers, ``faults`` records every faulty step, ``counters``
and ``stop_rules`` decide a halt, and ``reporting`` builds the report's pieces. Pure: no
ToolSandbox, no litellm, no file I/O.
"""
