"""Running a compiled workflow: the engine loop, run state, call context, prompts, inputs."""
