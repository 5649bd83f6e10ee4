"""Fig. 5 of paper 002: the Robosimian walk (forward distance) for every NMDP variant and ne_mdp at dt 5-50 ms.

The issue's name for one view of ``scripts/figures/nmdp_robosimian.py``, which runs every method and dt
once and prints and plots all of Fig. 3-5 and Table I; this entry point presets ``--motions walk`` (any
other option of nmdp_robosimian.py is passed on, e.g. ``--methods nmdp,ne_mdp --seconds 2``).

    python scripts/figures/fig_nmdp_walk.py [options of nmdp_robosimian.py]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nmdp_robosimian import main  # noqa: E402

if __name__ == "__main__":
    main([*"--motions walk".split(), *sys.argv[1:]])
