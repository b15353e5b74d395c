"""Built-in consequence types, grouped by domain. Registered through the
`wfexec.consequences` entry point like any plugin.

`TYPES` is made on first use: a cached workflow imports only the domains whose types it calls."""

from importlib import import_module

DOMAINS = ("state", "control", "files", "process", "git", "web", "display", "runlog", "intent", "llm", "corpus",
           "tools", "mcp")


def __getattr__(name: str):
    if name != "TYPES":
        raise AttributeError(name)
    types = [spec for domain in DOMAINS for spec in import_module(f"{__name__}.{domain}").TYPES]
    globals()["TYPES"] = types
    return types
