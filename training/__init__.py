"""Training and deployment of simulators: data recipes, SFT/RL launchers, serving."""
