"""A change that breaks the script: it exits 1 before compiling anything (a bad config)."""

import sys

sys.exit("bad config: no such dataset")
