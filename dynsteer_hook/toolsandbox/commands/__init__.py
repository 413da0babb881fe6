"""The ToolSandbox side of the ``dynsteer`` command line: ``run``, ``demo`` and ``scenarios`` (``run``),
``blueprint-eval`` (``quality``), ``compile`` (``compile``), ``replay`` and ``compare`` (``replay``), ``rerun``
(``rerun``) and ``diff`` (``diff``), all registered by ``register``."""
