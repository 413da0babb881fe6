"""During a rollout: the execution-time evaluator and its parts (paper §3.3-3.4).

``evaluator`` runs Algorithm 1 on the dual ``clock`` (with call/result ``pairing``):
``screening`` intercepts minefields on every raw event; on every closed action
``matching`` settles milestones, ``windows`` bound each stage's evidence, ``grounding`` and
``identifiers`` tell what the agent was shown, ``policy`` adapts weights and tiers and
``stop_rules`` decide a halt. Pure: no ToolSandbox, no litellm, no file I/O.
"""
