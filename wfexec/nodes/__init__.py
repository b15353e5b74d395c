"""Node types: one module per type, each declaring a `NodeType` (see `wfexec.nodes.base`) registered in
the entry-point group `wfexec.nodes`. Nothing here imports them: they are looked up by name."""
