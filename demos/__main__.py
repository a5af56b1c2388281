"""`python -m prep.demos NAME [--json] ...`: the same CLI as `prep demo`, for subprocesses.

It prints the report and records nothing: the front end that started it (the TUI's demo screen)
reads the JSON and records the run in its own database. Cards are not listed here: that needs
the decks.
"""

import sys

from prep.demos.cli import main

if __name__ == "__main__":
    sys.exit(main())
