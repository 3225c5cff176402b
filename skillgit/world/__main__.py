"""`python -m skillgit.world [seed ...]`: the world's benchmark table (see climb.py)."""

import sys

from skillgit.world.climb import main

main(sys.argv[1:])
