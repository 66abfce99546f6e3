"""`python -m bench`: run the benchmark (see bench/README.md)."""

from bench.run import main

raise SystemExit(main())
