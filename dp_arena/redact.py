"""Keeping private data and credentials out of what dp-arena writes and prints.

- :func:`read_problem`: why a file could not be read as CSV, by the *kind* of error (a row
  with another number of fields, text that is not UTF-8, an empty file), never the library's
  own text, which quotes a row number, a byte and its offset or the file's first line.
- :func:`scrubbed`: a foreign exception's text (pandas, numpy, a codec, a mechanism's library)
  with everything that could come from the data replaced: quoted strings (unless they are
  names the caller says are public, e.g. the schema's column names), byte strings and escapes,
  and every number that is not part of an identifier. The exception's type and the words
  around the values are kept, so the message still says what went wrong. Used for failure
  reasons (the ``failure_reason`` tag, ``outcome.json``, the summary) of errors that are not
  dp-arena's own (those name the column, the count and the fix, and nothing private).
- :func:`without_credentials`: a URI with its user name, password and secret-looking query
  parameters removed (``https://user:pw@host/?token=x`` -> ``https://host/``), for every URI
  that is logged or printed; :func:`command_without_credentials` applies it to each URI in a
  command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

#: Replaces a value taken out of a message.
HIDDEN = "<value>"
#: Query parameters that carry secrets in tracking/database URIs.
SECRET_QUERY_KEYS = ("token", "password", "passwd", "pwd", "secret", "key", "access_key",
                     "secret_key", "auth", "signature", "sig", "credential", "credentials")

_QUOTED = re.compile(r"""b?'(?:[^'\\\n]|\\.)*'|b?"(?:[^"\\\n]|\\.)*\"""")
_ESCAPE = re.compile(r"\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|0x[0-9a-fA-F]+")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?![\w])")
_URI = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"]+")
#: Longest scrubbed message (a library's message can quote a whole row).
MAX_CHARS = 500


def read_problem(exc: BaseException) -> str:
    """What kind of problem made a CSV unreadable, without any of the file's content."""
    import pandas as pd

    if isinstance(exc, UnicodeDecodeError):
        return f"it is not {exc.encoding} text (a byte that is not valid {exc.encoding})"
    if isinstance(exc, pd.errors.EmptyDataError):
        return "it is empty (no header row)"
    if isinstance(exc, pd.errors.ParserError):
        return "a row has a different number of fields than the header, or a quote is not closed"
    return type(exc).__name__


def scrubbed(text: str, public: Iterable[str] = ()) -> str:
    """``text`` with data-derived values replaced by ``<value>`` (see the module docstring);
    quoted strings in ``public`` (e.g. column names) are kept."""
    keep = {str(p) for p in public}

    def quoted(match: re.Match[str]) -> str:
        inner = match.group(0).lstrip("b")[1:-1]
        return match.group(0) if inner in keep else HIDDEN

    flat = " ".join(str(text).split())
    out = _URI.sub(lambda m: without_credentials(m.group(0)), flat)
    out = _QUOTED.sub(quoted, out)
    out = _ESCAPE.sub(HIDDEN, out)
    out = _NUMBER.sub(HIDDEN, out)
    return out if len(out) <= MAX_CHARS else out[:MAX_CHARS - 3] + "..."


def scrubbed_reason(exc: BaseException, public: Iterable[str] = ()) -> str:
    """``"<ExceptionType>: <scrubbed text>"`` for a foreign exception."""
    text = scrubbed(str(exc), public)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def without_credentials(uri: str) -> str:
    """``uri`` without user name, password or secret query parameters (other text unchanged)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    if not parts.scheme or (not parts.netloc and not parts.query):
        return uri
    netloc = parts.netloc.rpartition("@")[2]
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if k.lower() not in SECRET_QUERY_KEYS])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def command_without_credentials(arguments: Iterable[str]) -> list[str]:
    """Each argument with every URI in it passed through :func:`without_credentials`."""
    return [_URI.sub(lambda m: without_credentials(m.group(0)), str(a)) for a in arguments]
