"""PNG figures for the docs, drawn from the experiments' results files (docs/experiments.md).

Plotly's own PNG export needs kaleido, which is not a dependency; this draws each figure as an
offline HTML page in the Chromium the browser tests use (`tests.harness.chromium`, driven by
Playwright, a dev dependency) and saves a screenshot of it. The figures are the ones the
dashboard's Experiments page and the HTML report show (`rdqn.figures.experiments`,
`rdqn.figures.experiment_report`).

Usage:
    python -m benchmarks.experiment_figures --out docs/figures
    python -m benchmarks.experiment_figures --cliffwalk FILE --per-notebook FILE --minatar FILE \
        --recurrent FILE --out DIR
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import plotly.graph_objects as go

from tests.harness.chromium import CHROMIUM, CHROMIUM_ARGS

WIDTH, HEIGHT = 1000, 480


def figures(
    cliffwalk: Path | None,
    per_notebook: Path | None,
    minatar: Path | None = None,
    recurrent: Path | None = None,
) -> dict[str, go.Figure]:
    """Name -> figure for every results file given that exists."""
    from rdqn.figures.experiment_report import per_notebook_figures
    from rdqn.figures.experiments import cliffwalk_figure, minatar_figures, recurrent_figures

    out: dict[str, go.Figure] = {}
    if cliffwalk is not None and cliffwalk.exists():
        report = json.loads(cliffwalk.read_text(encoding="utf-8"))
        out["cliffwalk"] = cliffwalk_figure(report["summary"], threshold=report["threshold"])
    if per_notebook is not None and per_notebook.exists():
        report = json.loads(per_notebook.read_text(encoding="utf-8"))
        out.update(per_notebook_figures(report))
    if minatar is not None and minatar.exists():
        out.update(minatar_figures(json.loads(minatar.read_text(encoding="utf-8"))))
    if recurrent is not None and recurrent.exists():
        out.update(recurrent_figures(json.loads(recurrent.read_text(encoding="utf-8"))))
    return out


def save_pngs(named: dict[str, go.Figure], folder: Path) -> list[Path]:
    """Screenshot each figure at WIDTH x its height (default HEIGHT) into ``folder``/NAME.png."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        for name, figure in named.items():
            height = figure.layout.height or HEIGHT
            figure = go.Figure(figure).update_layout(width=WIDTH, height=height)
            html = Path(tmp) / f"{name}.html"
            html.write_text(
                figure.to_html(include_plotlyjs=True, full_html=True, config={"staticPlot": True}),
                encoding="utf-8",
            )
            page.set_viewport_size({"width": WIDTH, "height": height})
            page.goto(html.as_uri())
            page.wait_for_selector(".main-svg")
            path = folder / f"{name}.png"
            page.locator(".plotly-graph-div").first.screenshot(path=str(path))
            written.append(path)
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    results = Path("benchmarks/results")
    parser.add_argument("--cliffwalk", type=Path, default=results / "cliffwalk.json")
    parser.add_argument("--per-notebook", type=Path, default=results / "per_notebook.json")
    parser.add_argument("--minatar", type=Path, default=results / "minatar.json")
    parser.add_argument("--recurrent", type=Path, default=results / "recurrent.json")
    parser.add_argument("--out", type=Path, default=Path("docs/figures"))
    args = parser.parse_args()
    named = figures(args.cliffwalk, args.per_notebook, args.minatar, args.recurrent)
    for path in save_pngs(named, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
