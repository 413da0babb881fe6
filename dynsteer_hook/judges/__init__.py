"""Stage judges, pure: one signature for every tier (``base``), the steps they judge (``steps``),
Tier 1 rules (``tier1``), and the Tier 2/3 LLM judges (``llm_judges``) that take any client
and render their prompts from ``templates``. Building a client is the edge's work
(``dynsteer_hook.llm.judges``)."""
