"""The package version, apart from `wfexec/__init__.py` (whose lazy attributes pull in the API)."""

__version__ = "0.1.0"
