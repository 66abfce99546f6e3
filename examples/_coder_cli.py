"""A stand-in for a command-line coding agent (`claude -p`, `codex exec`, `aider --message`):
it reads its task on stdin, edits calc.py in the folder it runs in, runs it, and prints a JSON
report on its last line. Its "model" is a script, so the example runs offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CODE = "def add(a, b):\n    return a - b\n\nprint(add(2, 3))\n"


def main() -> int:
    task = sys.stdin.read()
    calc = Path("calc.py")
    if not calc.exists():
        calc.write_text(CODE)  # a first draft, with a bug for the reviewer to find
        done = "wrote calc.py"
    elif "a + b" in task and "a - b" in calc.read_text():
        calc.write_text(calc.read_text().replace("return a - b", "return a + b"))
        done = "fixed add() in calc.py"
    else:
        done = "calc.py needed no change"
    ran = subprocess.run([sys.executable, "calc.py"], capture_output=True, text=True, check=False)
    print(f"$ python calc.py\n{ran.stdout.strip()}")
    summary = f"{done}; it prints {ran.stdout.strip()}"
    print(json.dumps({"summary": summary, "files": ["calc.py"]}))
    return ran.returncode


if __name__ == "__main__":
    sys.exit(main())
