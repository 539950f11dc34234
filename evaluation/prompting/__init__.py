"""Prompts: the versioned prompt builder, reading a prompt back, the answer's JSON schema."""
