"""Model text made valid Unicode at the provider boundary.

A JSON string may legally hold a lone surrogate escape (`"\\ud83d"`); decoded, it is a Python
str that cannot be encoded as UTF-8, so it would break every later request that carries it and
every checkpoint that stores it. Each one becomes U+FFFD, the replacement character.
Tool-call arguments are JSON text, where the surrogate may still be an escape;
`valid_json_text` replaces it there too.

Example:
    >>> valid_unicode("ok \\ud83d")
    'ok \\ufffd'
    >>> valid_unicode("caf\\u00e9 \\U0001f600")
    'café 😀'
"""

from __future__ import annotations

import re
from typing import Any, cast

# Patterns compiled on first use (by `re`'s cache), not at `import raf`: most text has no
# surrogate, which `str.encode` finds without them.
_SURROGATE = "[\ud800-\udfff]"
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:  # only a surrogate cannot be encoded as UTF-8
        return re.sub(_SURROGATE, "\ufffd", text)
    return text


def valid_json_text(text: str) -> str:
    """JSON `text` (tool-call arguments) without lone surrogates, escaped or not.

    Text without a surrogate escape is returned as it is; text that is not JSON only has its
    raw surrogates replaced.

    Example:
        >>> valid_json_text('{"w": "x\\ud83d"}')
        '{"w": "x\ufffd"}'
    """
    text = valid_unicode(text)
    if "\\u" not in text or re.search(_SURROGATE_ESCAPE, text) is None:
        return text
    import json  # rarely needed: not loaded by `import raf`

    try:
        parsed: Any = json.loads(text)
    except ValueError:
        return text
    cleaned = valid_data(parsed)
    return text if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)


def valid_data(value: Any) -> Any:
    """JSON data (strings, lists, dicts) with every lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, list):
        return [valid_data(v) for v in cast(list[Any], value)]
    if isinstance(value, dict):
        return {valid_unicode(k): valid_data(v) for k, v in cast(dict[str, Any], value).items()}
    return value
