"""``rdqn warm-up``: every numba kernel compiled into numba's on-disk cache, with a progress bar
per kernel part; fails (status 1) when numba kept nothing on disk, and says so where a numba
whose cache cannot be read back leaves that unknown."""

from __future__ import annotations

import argparse
import sys
import time

from tqdm import tqdm

from rdqn.serve.worker import WARM_UP_PARTS, WarmUp, kernel_cache_dirs, kernels_cached, warm_up


def cmd_warm_up(args: argparse.Namespace) -> int:
    """``rdqn warm-up``: the exit status (0: the kernels are in the cache)."""
    bar = tqdm(
        total=len(WARM_UP_PARTS),
        desc="warm-up",
        unit="part",
        disable=args.quiet,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    heard: list[WarmUp] = []

    def show(progress: WarmUp) -> None:
        heard.append(progress)
        verb = "compiling" if progress.compiling else "loading"
        label = f"{verb} {progress.part}" if progress.part else "kernels ready"
        bar.set_description_str(label, refresh=False)
        bar.update(progress.done - bar.n)

    start = time.monotonic()
    try:
        warm_up(show)
    finally:
        bar.close()
    seconds = time.monotonic() - start
    where = ", ".join(kernel_cache_dirs())
    cached = kernels_cached()
    if cached is None:  # this numba's cache cannot be read back: the kernels ran, that is all
        print(
            f"kernels compiled in {seconds:.1f} s; this numba does not say whether it keeps them "
            "on disk (a later process may compile them again)"
        )
        return 0
    if not cached:
        print(f"rdqn: error: numba did not keep the compiled kernels in {where}", file=sys.stderr)
        return 1
    done = "compiled into" if heard and heard[0].compiling else "already in"
    print(f"kernels {done} numba's cache in {seconds:.1f} s: {where}")
    return 0
