"""A plugin with a bug in a handler, as any program may have."""
