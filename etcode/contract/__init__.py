"""The contract every room speaks: the events a run emits, what a run returns, the context a
tool runs in with its results and errors, and the permission callables.

The ground floor: it imports only provider types, ``util`` and ``security``; every other
room may import it, and it imports none of them.
"""
