"""The random-RGD property test (tests/graph/test_property_random_rgds.py) at scale; prints the
outcome counts and the time, never asserts beyond what the test itself asserts.

    .venv/bin/python bench/bench_property.py [--examples 10000]

Every example is a random RGD and instance taken through the builder and one reconcile pass
of per-instance evaluation. The test fails on the first example that ends in an unexpected
exception (Hypothesis then shrinks it and prints it); otherwise this prints how the examples
ended: a build error (by class), a rendered pass, a pass waiting on data, or an evaluation
error. The unit suite runs the same test with 200 examples.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    args = parser.parse_args()
    os.environ["KRO_PROPERTY_EXAMPLES"] = str(args.examples)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "graph"))
    import test_property_random_rgds as prop

    started = time.perf_counter()
    prop.test_random_rgds_end_in_a_value_or_a_clear_error()
    elapsed = time.perf_counter() - started
    total = sum(prop.OUTCOMES.values())
    print(f"{total} examples in {elapsed:.1f} s ({1000 * elapsed / max(total, 1):.1f} ms each)")
    for outcome, count in prop.OUTCOMES.most_common():
        print(f"  {count:6d}  {100 * count / total:5.1f}%  {outcome}")


if __name__ == "__main__":
    main()
