"""raf's benchmark suite: raf, a plain-anyio floor and peer frameworks, scenario by scenario.

Run it with `python -m bench` (see bench/README.md). Nothing is imported here, so a worker
process can read its memory before any framework loads.
"""
