"""dp-arena harness: data, schema, privacy accounting, runner, tracking and leaderboard."""

__version__ = "0.1.0"
