"""Train the spider to walk with CMA-ES (paper 000 Fig. 5b; issue #21).

A sine gait per joint (12 joints: shared frequency, amplitude, phase, offset: 37 parameters) drives
the stable-PD joint targets of pbsim/Spider-v0 (PBAD at dt = 0.05, Eq. 9 penalty contact); each
CMA-ES generation is one batched rollout of the whole population (5 s episodes; a fall ends an
episode).  The initial controller stands still.  Prints the initial and the best forward
distance, writes docs/img/train_spider.png and docs/controllers/spider_cmaes.npz.

    python scripts/examples/train_spider.py
    python scripts/examples/train_spider.py --generations 5
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts" / "examples")]
from train_swimmer import main  # noqa: E402

if __name__ == "__main__":
    main("Spider", "spider", default_generations=40, default_steps=100)
