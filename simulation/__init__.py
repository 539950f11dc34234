"""The run-time for Simia-style pipelines: simulated environments, agents, drift, RL/OpenEnv wrappers."""
