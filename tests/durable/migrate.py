"""Create a DBOS system database and run DBOS's migrations on it, then stop.

python -m tests.durable.migrate DB_URL
"""

from __future__ import annotations

import sys

from dbos import DBOS

from tests.durable.process import configure_dbos

if __name__ == "__main__":
    configure_dbos("raf-template", sys.argv[1], "template")
    DBOS.launch()
    DBOS.destroy()
