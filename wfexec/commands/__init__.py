"""The command line's helpers: run/resume drivers, run listings, terminal output."""
