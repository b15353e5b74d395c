"""What an activity keeps of its step for whoever watches the run (`wfexec serve --temporal`): the output of the
step's programs (its last `outputs.KEEP_BYTES`, as a SQLite run's store keeps it) and its agents' transcripts.
Returned with the step's result, they are in the cluster's history, where a client reads them; the workflow code
keeps none of it."""

from __future__ import annotations

import threading

from wfexec.durable.outputs import StepOutput
from wfexec.running.engine import Journal


class KeptByStep(Journal):
    keeps_output = True

    def __init__(self, node_id: str):
        self.node_id = node_id
        self.transcript: list[dict] = []
        self._output = StepOutput(0, node_id, 0)
        self._lock = threading.Lock()  # programs' pipes are read from threads of their own

    def record_output(self, node_id: str, text: str) -> None:
        with self._lock:
            self._output.add((text + "\n").encode("utf-8", "replace"))

    def record_transcript(self, node_id: str, agent: str, record: dict) -> None:
        with self._lock:
            self.transcript.append({"node": node_id, "agent": agent, **record})

    def kept(self) -> dict | None:
        """What the step kept, as the activity's result carries it (`kept`), or None when it kept nothing."""
        with self._lock:
            if not self._output.written and not self.transcript:
                return None
            return {"node": self.node_id, "output": self._output.cut().decode("utf-8", errors="replace"),
                    "output_bytes": self._output.written, "transcript": self.transcript}
