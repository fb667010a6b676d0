"""dp-arena's version (the package's ``__version__``; the wheel's version is read from here)."""

VERSION = "0.1.0"
