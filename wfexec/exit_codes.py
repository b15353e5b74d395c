"""Process exit codes (DESIGN §7), in one place for every command."""

OK = 0              # a success ending
ENDING_FAILED = 1   # a failure/error/cancelled ending, a failed entry gate, a run-time error
INVALID = 2         # the workflow is invalid, or the command line is wrong
WAITING = 3         # the run waits for an answer (or a decision) before it can go on
STOPPED = 4         # step budget, interrupt, no backend
