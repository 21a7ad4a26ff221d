"""The match viewer's weight and load time, in Debian's Chromium, over 127.0.0.1.

Plays one 4-seat match with the sample bots (``referee match``), serves its folder with
``referee web`` and opens ``/match?id=ID`` ``--loads`` times in a fresh browser context
each (nothing cached). Prints, per load, the bytes the page fetched (the HTML, the
stylesheet, the scripts and the match's viewer document, as sent) and the time from
navigation to the card table drawn (``#trick`` in the page); then the medians, the
share of CPU stolen by the host while it ran (``machine.py``) and the targets: under
100 kB and under 0.5 s. The last line is ``viewer_bytes=<b> viewer_load_ms=<m>``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import Steal, loaded_warning

ROOT = Path(__file__).resolve().parent.parent
REFEREE = Path(sys.executable).with_name("referee")
CHROMIUM = "/usr/bin/chromium"
TARGET_BYTES = 100_000
TARGET_LOAD_S = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=7, help="page loads (default 7)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [str(REFEREE), "match", "--seed", "7", "--out", str(out)]
        for bot in ("heuristic", "random", "heuristic", "random"):
            cmd += ["--bot", str(ROOT / "sample_bots" / f"{bot}.toml")]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300, cwd=ROOT)
        folder = out if (out / "matches").is_dir() else out.parent
        if not (folder / "matches").is_dir():
            (folder / "matches").mkdir()
            for path in out.glob("*.jsonl"):
                path.rename(folder / "matches" / path.name)
        match_id = next((folder / "matches").glob("*.jsonl")).stem
        web = subprocess.Popen(
            [str(REFEREE), "web", str(folder), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert web.stdout is not None
            url = web.stdout.readline().split(" ", 2)[2].strip().rstrip("/")
            steal = Steal()
            sizes, times = [], []
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                for _ in range(args.loads):
                    context = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = context.new_page()
                    fetched: list[int] = []
                    page.on(
                        "requestfinished",
                        lambda r, into=fetched: into.append(r.sizes()["responseBodySize"]),
                    )
                    started = time.perf_counter()
                    page.goto(f"{url}/match?id={match_id}")
                    page.wait_for_selector("#trick")
                    times.append(time.perf_counter() - started)
                    page.wait_for_load_state("networkidle")
                    sizes.append(sum(fetched))
                    print(
                        f"load: {sum(fetched)} bytes in {len(fetched)} requests, {times[-1] * 1000:.0f} ms"
                    )
                    context.close()
                browser.close()
            stolen = steal.percent()
        finally:
            web.terminate()
            web.wait(10)
    size, load = statistics.median(sizes), statistics.median(times)
    print(
        f"median: {size:.0f} bytes (target < {TARGET_BYTES}), {load * 1000:.0f} ms "
        f"(target < {TARGET_LOAD_S * 1000:.0f}); steal {stolen:.1f}%"
    )
    warning = loaded_warning([stolen])
    if warning:
        print(warning)
    print(f"viewer_bytes={size:.0f} viewer_load_ms={load * 1000:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
