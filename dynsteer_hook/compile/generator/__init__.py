"""The deterministic candidate generator: candidate graphs from a public view, no LLM.

``instruction`` reads what the user asks, ``tool_semantics`` what each tool does; the
``planner`` chains ``goals`` and ``prerequisites`` backwards into a ``necessity_plan``;
``candidates`` thresholds that plan into C candidate graphs, one per focus code.
"""
