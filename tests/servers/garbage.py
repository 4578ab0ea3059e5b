"""A server that breaks the stdio contract by printing non-JSON-RPC text on stdout.

``python garbage.py only``: prints noise and never answers (magent must fail fast, clearly).
``python garbage.py banner``: prints one banner line, then serves the toolbox normally.
"""

from __future__ import annotations

import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "only"
print("Welcome to the garbage server! This is not JSON-RPC.", flush=True)
if mode == "banner":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import toolbox

    toolbox.server.run("stdio")
    toolbox.leave()
else:
    for line in sys.stdin:  # answer every request with more noise
        print(f"??? {line.strip()[:20]}", flush=True)
    time.sleep(0.1)
