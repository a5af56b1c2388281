"""`python -m prep.demos NAME [--json] ...`: the same CLI as `prep demo`, for subprocesses.

Records the run in the progress database only when PREP_DB names one (the lead's `prep demo`
passes its own --db instead). Cards are not listed here: that needs the decks.
"""

import os
import sys

from prep.demos.cli import main

if __name__ == "__main__":
    sys.exit(main(db=os.environ.get("PREP_DB") or None))
