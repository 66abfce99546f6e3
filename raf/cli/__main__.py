"""`python -m raf.cli`: the `raf` command."""

from raf.cli.main import entry

if __name__ == "__main__":
    entry()
