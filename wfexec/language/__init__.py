"""Reading a workflow: YAML with positions, the schema, semantic checks, compiled model, expressions."""
