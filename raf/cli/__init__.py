"""The `raf` command: run, inspect, render and serve agents and workflows.

One module per job: `main` parses the arguments, `targets` loads `MODULE:ATTR`, `commands` runs
`raf run`, `raf tree` and `raf graph`, `demo` is `raf demo`, and `live_tree` draws a run as it
streams.
"""
