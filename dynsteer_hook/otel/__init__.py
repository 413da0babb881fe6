"""OpenTelemetry export of evaluated rollouts (the optional extra ``otel``): the one place importing ``opentelemetry``.

Each rollout becomes an ``invoke_agent`` span with an ``execute_tool`` child per tool call, each
judged stage a ``gen_ai.evaluation.result`` event on the span of the call that closed it, the
first error and the stop events with ``dynsteer.*`` attributes, the halt the rollout span's
status (OpenTelemetry's GenAI semantic conventions). ``settings`` says where the telemetry goes
(read from ``--otel`` and the standard ``OTEL_*`` variables; it imports no OpenTelemetry, so a
command checks it before it starts); ``export`` builds this process's own providers and
exporters, never the global ones; ``observer`` is the ``RolloutHook`` that makes the spans, fed
by a live run, a replay or ``dynsteer evaluate`` alike.
"""
