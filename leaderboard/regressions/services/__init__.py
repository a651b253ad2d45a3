"""Writes for nightly regression: detection and queueing (detection), the
rig's build report and the verdicts (builds), alerts (alerts), bisection."""
