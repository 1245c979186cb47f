"""What a team keeps in its repository for agents: skills (``SKILL.md`` folders), custom
slash commands (Markdown prompts) and hooks (commands run on agent events), read in the
formats Claude Code and the Agent Skills standard use."""
