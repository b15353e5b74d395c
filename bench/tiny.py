"""`--tiny` for every bench: one quick round at a tiny size, so the test suite can run each bench and notice when
one breaks (tests/test_benches.py). Its figures mean nothing."""

from __future__ import annotations

import argparse


def parse_sized(parser: argparse.ArgumentParser, **tiny_sizes) -> argparse.Namespace:
    """The bench's arguments; with --tiny, `tiny_sizes` (argument name → value) replace the sizes given."""
    parser.add_argument("--tiny", action="store_true",
                        help="one quick round at a tiny size: checks that the bench runs (its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        for name, value in tiny_sizes.items():
            assert hasattr(args, name), name  # a size the bench no longer has
            setattr(args, name, value)
    return args
