"""User-facing errors: one message that names the problem and the fix."""

from __future__ import annotations


class DPArenaError(Exception):
    """An error caused by the user's input or configuration.

    The CLI prints ``str(error)`` without a traceback and exits non-zero.
    """

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if fix is None else f"{problem}\n  fix: {fix}")


class SchemaError(DPArenaError):
    """Data that does not match its schema; lists every problem at once."""

    def __init__(self, problems: list[str], where: str = "data", fix: str | None = None):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{where} does not match the schema ({len(self.problems)} problem"
            f"{'s' if len(self.problems) != 1 else ''}):\n{lines}",
            fix,
        )


class BudgetExceededError(DPArenaError):
    """A noisy release would push the run's privacy ledger over its budget."""


class ConfigError(DPArenaError):
    """A configuration value is missing, unknown or out of range."""


class NotApplicable(ConfigError):
    """A mechanism (or metric) that cannot run on this dataset: its privacy unit, public part
    or data shape does not fit. A sweep lists the pair as ``n/a`` with the reason, up front,
    instead of counting it as a failure; a single run still stops with the message."""
