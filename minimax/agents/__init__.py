"""Learning algorithms (PPO)."""
