"""Tuning campaigns: a search over a rig's llama-server configuration, trial by trial."""
