"""A/B performance runs on models of users' shapes: two engines (sites or speculative configs)
measured in interleaved rounds on one GPU, with a bootstrap interval on the ratio of each figure.

Pure parts (no GPU): shapes (the dummy-weight model configs), experiments (what each A/B
compares), schedule (the order of engine starts and rounds), stats (the bootstrap), results
(progress lines to a result JSON), pace (the step loop's timings within a round) and table
(result JSONs to docs/BENCHMARKS.md's table). GPU parts: worker (one engine in its own
process) and driver (the engines of one run, in turn).
"""
