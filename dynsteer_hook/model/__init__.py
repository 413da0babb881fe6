"""The shared vocabulary of both halves of the method, pure: what ``compile/`` and ``runtime/`` say to each other.

The blueprint model (``blueprint``, with its ``predicates`` and tool ``catalog``), its contract
check (``contract``), the graph algorithms it needs (``graph``, ``dominators``), the public
task view a compiler may see (``task_view``), the framework-neutral events a rollout feeds
(``events``), the evaluator's thresholds (``config``), the audit records and the report
(``records``), the one exception tree (``errors``), and the defusing of untrusted text
(``untrusted``). Pure: no ToolSandbox, no litellm, no file I/O.
"""
