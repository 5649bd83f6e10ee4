"""Table I of paper 002: the std across dt of jump height and walk distance (B-T6), resampled on a 10 ms grid.

The issue's name for one view of ``scripts/figures/nmdp_robosimian.py``, which runs every method and dt
once and prints and plots all of Fig. 3-5 and Table I; this entry point presets ``--motions jump,walk`` (any
other option of nmdp_robosimian.py is passed on, e.g. ``--methods nmdp,ne_mdp --seconds 2``).

    python scripts/figures/table_nmdp_consistency.py [options of nmdp_robosimian.py]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nmdp_robosimian import main  # noqa: E402

if __name__ == "__main__":
    main([*"--motions jump,walk".split(), *sys.argv[1:]])
