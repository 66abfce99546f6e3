"""`python -m raf.cli`: the `raf` command."""

from raf.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
