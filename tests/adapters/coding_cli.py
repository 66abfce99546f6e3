"""A tiny coding-agent CLI for the tests: `python coding_cli.py [--spawn PIDFILE] [PROMPT]`.

It reads its prompt from its last argument, or from stdin when it has none. A prompt
`fix FILE: OLD -> NEW` replaces OLD by NEW in FILE (relative to the folder it runs in) and
prints a JSON report; `--spawn PIDFILE` first starts a grandchild that sleeps for ever, writes
its pid to PIDFILE, and then sleeps for ever itself (to be killed)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--spawn"]:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        Path(argv[1]).write_text(str(child.pid))
        time.sleep(3600)
        return 0
    prompt = argv[-1] if argv else sys.stdin.read()
    task = prompt.strip().splitlines()[-1]
    if not task.startswith("fix "):
        print(f"cannot do {task!r}", file=sys.stderr)
        return 2
    name, change = task.removeprefix("fix ").split(": ", 1)
    old, new = change.split(" -> ", 1)
    path = Path(name)
    text = path.read_text()
    if old not in text:
        print(json.dumps({"changed": False, "file": name, "note": f"{old!r} not found"}))
        return 1
    path.write_text(text.replace(old, new))
    print(json.dumps({"changed": True, "file": name, "note": f"replaced {old!r}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
