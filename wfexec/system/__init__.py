"""The host: files written atomically and guarded, child processes."""
