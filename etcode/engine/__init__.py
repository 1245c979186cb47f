"""The engine: the ReAct loop and what it runs with — the event pump, the seams through
which a run is recorded and its window kept (``seams``), the context window, compaction and
the interception seam hooks use.

It imports the rooms below it (contract, tools, prompt, provider, security, util); never
persistence (``session``) nor the composition root (``wiring``), which hand it a recorder
and a window.
"""
