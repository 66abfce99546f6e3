"""Instructions by component under callgrind (`python -m bench.attribution`)."""
