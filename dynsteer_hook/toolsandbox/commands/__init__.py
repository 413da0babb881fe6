"""The ToolSandbox side of the ``dynsteer`` command line: ``run``, ``demo`` and ``scenarios`` (``run``),
``blueprint-eval`` (``quality``), ``compile`` (``compile``), ``replay`` and ``compare`` (``replay``), all
registered by ``register``."""
