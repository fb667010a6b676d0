"""How a CSV is written: its delimiter and its text encoding, found from the file's beginning
before it is read, so a file the reader would misread is refused with the setting that reads
it (a tab-separated file used to load silently as one column; a Latin-1 file was called "not
utf-8" with a fix about commas).

- :func:`delimiter_of`: the delimiter of the header row (comma, tab, semicolon or pipe);
- :func:`encoding_problem`: why the beginning is not text in the encoding given (NUL bytes: a
  binary file; a UTF-16 byte-order mark; bytes that are not UTF-8, as Latin-1 and Windows
  exports have);
- :func:`check_csv_format`: both, as one :class:`~dp_arena.errors.DPArenaError` naming the
  setting to pass (``dataset.sep=tab`` / ``--sep tab``, ``dataset.encoding=cp1252`` /
  ``--encoding cp1252``);
- :func:`separator`: a ``sep`` setting (``tab``, ``semicolon``, ``,`` ...) as the character.

Only the header row's shape is described (how many names each delimiter splits it into:
column names are the schema's, public); no cell value is quoted.
"""

from __future__ import annotations

import codecs
import zipfile
from pathlib import Path

from dp_arena.errors import ConfigError, DPArenaError

#: Delimiters recognised, by the name a setting may use.
DELIMITERS = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|"}
#: Bytes of the file's beginning that are examined.
HEAD_BYTES = 64 * 1024


def separator(value: str, option: str = "dataset.sep") -> str:
    """A ``sep`` setting (``option``) as the one character it names: a name of
    :data:`DELIMITERS`, the character itself, or ``\\t``."""
    text = str(value)
    if text.lower() in DELIMITERS:
        return DELIMITERS[text.lower()]
    if text == "\\t" or text in DELIMITERS.values():
        return "\t" if text == "\\t" else text
    given = "=" if option.startswith("dataset") else " "
    raise ConfigError(f"{option} {value!r} is not a delimiter dp-arena reads",
                      f"pass {option}{given}comma, tab, semicolon or pipe")


def delimiter_name(sep: str) -> str:
    return next((name for name, char in DELIMITERS.items() if char == sep), repr(sep))


def head_of(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The file's first ``size`` bytes (a zip's first member's); ``b""`` for other
    compressed files, which the reader decompresses itself."""
    if path.suffix == ".zip" and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if not members:
                return b""
            with archive.open(members[0]) as handle:
                return handle.read(size)
    if path.suffix in (".gz", ".bz2", ".xz", ".zst", ".tar"):
        return b""
    with open(path, "rb") as handle:
        return handle.read(size)


def encoding_problem(head: bytes, encoding: str) -> str | None:
    """Why ``head`` (a file's beginning, possibly cut inside a character) is not text in
    ``encoding``, or ``None``."""
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "it holds NUL bytes: it is not a text file (a spreadsheet or a compressed file?)"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and \
            not encoding.lower().replace("-", "").startswith("utf16"):
        return "it is UTF-16 text (it starts with a UTF-16 byte-order mark)"
    try:
        codecs.getincrementaldecoder(encoding)().decode(head, final=False)
    except UnicodeDecodeError:
        return f"it is not {encoding_label(encoding)} text"
    except LookupError:
        return None  # an unknown encoding name: the setting's own check says so
    return None


def encoding_label(encoding: str) -> str:
    """``UTF-8`` for any spelling of it, else the name as given."""
    return "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding


def header_line(text: str) -> str:
    return text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""


def delimiter_of(header: str) -> str | None:
    """The delimiter that splits ``header`` into the most names (of :data:`DELIMITERS`),
    ``None`` when none splits it (a one-column file)."""
    counts = {char: header.count(char) for char in DELIMITERS.values()}
    best = max(counts, key=lambda char: counts[char])
    return best if counts[best] else None


def check_csv_format(path: Path, what: str, sep: str = ",", encoding: str = "utf-8",
                     options: tuple[str, str] = ("dataset.sep", "dataset.encoding")) -> None:
    """Refuse a CSV that reading with ``sep`` and ``encoding`` would misread: text in another
    encoding, or a header that another delimiter splits and ``sep`` does not. ``options``:
    how the command names the two settings (``dataset.sep`` or ``--sep``)."""
    sep_option, encoding_option = options
    try:
        codecs.lookup(encoding)
    except LookupError:
        given = "=" if encoding_option.startswith("dataset") else " "
        raise ConfigError(f"{encoding_option} {encoding!r} is not a text encoding Python knows",
                          f"pass {encoding_option}{given}utf-8 (or cp1252, latin-1, utf-16)") \
            from None
    head = head_of(path)
    problem = encoding_problem(head, encoding)
    if problem is not None:
        raise DPArenaError(f"{what}: cannot read {path} as CSV: {problem}",
                           encoding_fix(problem, path, encoding_option))
    header = header_line(head.decode(encoding, errors="replace"))
    found = delimiter_of(header)
    if found is not None and found != sep and header.count(sep) == 0:
        name = delimiter_name(found)
        raise DPArenaError(f"{what}: {path} is {name}-separated (its header row has "
                           f"{header.count(found) + 1} {name}-separated names and no "
                           f"{delimiter_name(sep)})",
                           f"pass {sep_option}{'=' if sep_option.startswith('dataset') else ' '}"
                           f"{name}")


def encoding_fix(problem: str, path: Path, option: str) -> str:
    """The fix for :func:`encoding_problem`'s ``problem``."""
    given = "=" if option.startswith("dataset") else " "
    if "NUL bytes" in problem:
        return "export the table as CSV text (File > Save as > CSV in a spreadsheet)"
    if "UTF-16" in problem:
        return f"pass {option}{given}utf-16, or save the file as UTF-8"
    return (f"if it was saved as Latin-1 or Windows-1252 (Excel's CSV on Windows), pass "
            f"{option}{given}cp1252 (or latin-1); or convert it once: iconv -f cp1252 -t utf-8 "
            f"{path.name} > {path.stem}-utf8{path.suffix}")
