"""dynsteer live in ToolSandbox's loop: the hook object the loop calls (``hook``), the middleware that maps
the loop's rows to events and feeds the hook (``adapter``), playing one scenario (``playing``) and running
many (``runner``, ``engines``, ``interrupts``), the checks before the first rollout (``preflight``), and what
a run yields (``results``, ``summaries``)."""
