"""`wfexec serve`: the web door over the run store, or over a Temporal cluster (DESIGN §6).

The server owns no run. It reads the same SQLite store as `run` and `resume` (a run started at a terminal shows
here), and every run it starts or continues is a `wfexec run`/`wfexec resume` process of its own, which holds the
run's lease like any other. Modules: `config` (what was asked for), `security` (who may ask what), `views` (where
runs are read from: `store_view`, what the store says as JSON, or `cluster_view`, the same over a cluster),
`feed` (the one reader of the store every event stream shares), `events` (server-sent events), `drawing` (the
graph as SVG), `processes` (the runs it starts), `actions` (answer, cancel, resume, run again,
launch), `command_lines` (the same at a terminal), `workflows` (what may be launched), `api` and `pages` (the
routes), `app` (wiring), `command` (the `wfexec serve` command), `cluster_history` (what a cluster run's history
holds beyond its queries: its inputs, output and transcripts).
"""
