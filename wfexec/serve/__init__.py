"""`wfexec serve`: the web door over the run store (DESIGN §6).

The server owns no run. It reads the same SQLite store as `run` and `resume` (a run started at a terminal shows
here), and every run it starts or continues is a `wfexec run`/`wfexec resume` process of its own, which holds the
run's lease like any other. Modules: `config` (what was asked for), `security` (who may ask what), `store_view`
(what the store says, as JSON), `processes` (the runs it starts), `actions` (answer, cancel, resume, launch),
`workflows` (what may be launched), `events` (server-sent events), `api` and `pages` (the routes), `app` (wiring),
`command` (the `wfexec serve` command).
"""
