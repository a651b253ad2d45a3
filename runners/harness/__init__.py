"""Measuring a server: launch or attach (server, orphans), what the rig is
(fingerprint, gguf, power), what is sent (workload), what one request measures
(measure), the repetitions, sweeps and concurrency levels built from it (suite,
sweep, concurrency), and the tables a rig owner reads (report, progress)."""
