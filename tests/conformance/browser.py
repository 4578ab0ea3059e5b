#!/usr/bin/env python3
"""A browser for tests: opens the URL it is given and follows redirects, as a person's browser
would when the authorization server approves at once (the conformance suite's does).

Used as ``BROWSER`` (Python's ``webbrowser`` runs it with the URL), so ``magent mcp login`` takes
the same path as with a real browser: the redirect lands on magent's listener on 127.0.0.1.
"""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=20) as page:
    page.read()
