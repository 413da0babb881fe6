"""Before a rollout: a public task view becomes a milestone blueprint (paper §3.2).

Candidate graphs (from ``generator/`` or a language model prompted with ``candidate_prompt``)
are checked against their contracts (``dynsteer_hook.model.contract``), merged by strict majority
(``consensus``) and reduced; ``compiler`` pools the sources and records provenance. Pure:
no ToolSandbox, no litellm, no file I/O.
"""
