"""Model text made valid Unicode at the provider boundary.

A JSON string may legally hold a lone surrogate escape (`"\\ud83d"`); decoded, it is a Python
str that cannot be encoded as UTF-8, so it would break every later request that carries it and
every checkpoint that stores it. Each one becomes U+FFFD, the replacement character.

Example:
    >>> valid_unicode("ok \\ud83d")
    'ok \\ufffd'
    >>> valid_unicode("caf\\u00e9 \\U0001f600")
    'café 😀'
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)
