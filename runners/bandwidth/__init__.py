"""The memory-bandwidth bound on decode speed (issue 38), with no Django: what one
decoded token reads (``weights``: the model's tensors and the KV cache), where each
part lives (``offload``: -ngl, -ot, --n-cpu-moe, CPU-only) and the ceiling that
gives at each memory's speed (``bound``). The service's hardware catalog
(leaderboard/results/hardware/) supplies the speeds."""
