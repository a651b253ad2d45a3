"""Tuning campaigns on the rig side (no Django): the spec, the search, one trial, the driver."""
