"""``python -m harness.cli`` = ``dp-arena``."""

from harness.cli.main import main

if __name__ == "__main__":
    main()
