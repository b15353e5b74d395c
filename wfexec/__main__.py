"""`python -m wfexec`: the `wfexec` command, for a process that has the interpreter but not the console script
on its PATH (`wfexec serve` starts each run this way, with its own interpreter)."""

from wfexec.launcher import main

main()
