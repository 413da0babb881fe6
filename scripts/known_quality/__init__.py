"""Agents of known quality over ToolSandbox scenarios, built from the hidden evaluation.

Test and benchmark side only: these modules read each scenario's hidden milestones and
minefields, which the package's compiler and evaluator never see. ``scripts/known_agents.py``
is the entry point (importable, and a command line).
"""
