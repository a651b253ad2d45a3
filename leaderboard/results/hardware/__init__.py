"""The hardware figures the memory-bandwidth bound needs (issue 38): a catalog of
GPUs and CPUs with each figure's vendor source (gpus.csv, cpus.csv; README.md says
how a row is added), and the bound of a run (runs.py) and an estimate where nobody
measured (estimate.py), on the pure computation in runners/bandwidth/."""
