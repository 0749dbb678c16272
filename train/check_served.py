"""Does ``ranking.py`` rebuild what the server serves? MiniLM through a real server vs offline.

For each set, ``bench/search_quality.py``'s ``evaluate()`` with the variant
``ours + semantic`` (``SearchMiddleware(semantic=True)`` through a FastMCP client) beside
``ranking.Prepared.top`` with MiniLM's vectors and the shipped lexical weight: R@1, Hit@1,
R@5, nDCG@10. They agree exactly on MetaTool (one server, no groups) and differ on the
multi-server catalogs because ``search_quality.build_server`` gives the per-server groups
only to the variant ``ours``, not to ``ours + semantic``: served, the semantic variant ranks
without the servers' names and descriptions (lexically and semantically); offline, as
``semantic_options.py`` and ``SearchMiddleware`` with declared groups do, with them.

Usage: ``python train/check_served.py [--sample N] [--sets livemcpbench arcade ...]``
"""

from __future__ import annotations

import argparse

from catalogs import EVAL_FILES
from evaluate import Run, measure, served
from ranking import SHIPPED_WEIGHT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--catalogs", nargs="+", default=list(EVAL_FILES), choices=list(EVAL_FILES))
    args = parser.parse_args()
    run = Run(args.sample or None, "minilm")
    for catalog in args.catalogs:
        for prepared in run.sets(catalog):
            through = served(run, catalog, prepared, "ours + semantic")
            offline = measure(prepared, None, SHIPPED_WEIGHT)
            for label, m in (("served", through), ("offline", offline)):
                cells = " ".join(f"{x:6.1f}" for x in m)
                print(f"{prepared.name:<18} {label:<8} {cells}")


if __name__ == "__main__":
    main()
