"""Files made from a workflow: SKILL.md, pictures, the language docs, scaffolds."""
