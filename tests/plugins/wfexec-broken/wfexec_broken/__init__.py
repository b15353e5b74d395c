"""Broken on purpose: each module holds one mistake a plugin author makes."""
