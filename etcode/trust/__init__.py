"""Project trust: which of a project's settings need the user's yes before they are used
(``project.py``: the findings, the approvals store, the gate), which project allows loosen
the user's own rules (``loosening.py``), and the project's markdown agents read as layers for
that check (``agent_files.py``). Above config, permission, mcp and agent, which it consults.
"""
