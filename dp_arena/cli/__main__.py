"""``python -m dp_arena.cli`` = ``dp-arena``."""

from dp_arena.cli.main import main

if __name__ == "__main__":
    main()
