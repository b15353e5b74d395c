"""`wfexec lsp`: a language server for workflow files (v1 and v8), states folders and their state files.

`server` wires the requests to: `index` (a workflow's diagnostics, nodes, routes and writes, from the checker),
`text` (where the cursor is), `hover`, `completion`, `navigation`, `diagnostics` (LSP shapes, quick fixes) and
`states` (state files). Needs `wfexec[lsp]` (pygls).
"""
