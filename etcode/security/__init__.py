"""Security policy: what a Bash line will run (a real bash grammar) and which parts of it no
allow rule may cover, the OS sandbox and its seccomp filter, the environment commands
inherit, which project files are the user's own, secret redaction, the web addresses WebFetch may reach, and process hardening.

A ground-level room: it imports only ``util``; tools, the permission
service and the front ends consult it.
"""
