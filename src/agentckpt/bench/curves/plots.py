"""The curves as PNG images (matplotlib, Agg backend: no display needed).

One set per backend: ``<dialect>-commit-cost.png`` (client CPU and wall per commit
against turn number), ``<dialect>-bytes.png`` (bytes stored against turns and against
steps) and ``<dialect>-throughput.png`` (saturated writes/s against concurrent agents).
Per-turn values are drawn as a moving mean over 20 turns (the raw values are in the
JSON).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentckpt.bench.curves.model import Curves
from agentckpt.bench.errors import BenchmarkError
from agentckpt.bench.extra import INSTALL
from agentckpt.bench.results import BackendResults

__all__ = ["write_plots"]

_SMOOTH = 20


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise BenchmarkError(f"--plots needs matplotlib, in the bench extra: {INSTALL}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _smooth(values: list[float]) -> list[float]:
    out, total = [], 0.0
    for index, value in enumerate(values):
        total += value
        if index >= _SMOOTH:
            total -= values[index - _SMOOTH]
        out.append(total / min(index + 1, _SMOOTH))
    return out


def _title(results: BackendResults) -> str:
    return "PostgreSQL" if results.dialect == "postgresql" else "SQLite"


def _commit_cost(plt: Any, results: BackendResults, curves: Curves, path: Path) -> None:
    figure, (cpu, wall) = plt.subplots(1, 2, figsize=(12, 4.5))
    for curve in curves.commit_cost:
        turns = list(range(1, len(curve.cpu_ms) + 1))
        cpu.plot(turns, _smooth(curve.cpu_ms), label=curve.label)
        wall.plot(turns, _smooth(curve.wall_ms), label=curve.label)
    for axes, what in ((cpu, "client CPU"), (wall, "wall time")):
        axes.set_xlabel("turn")
        axes.set_ylabel(f"{what} per commit (ms)")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
    cpu.legend(fontsize=8)
    figure.suptitle(f"{_title(results)}: cost per commit against turn number (one chat)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _bytes(plt: Any, results: BackendResults, curves: Curves, path: Path) -> None:
    figure, (by_turn, by_step) = plt.subplots(1, 2, figsize=(12, 4.5))
    for axes, series, unit in (
        (by_turn, curves.bytes_by_turn, "turns (one chat)"),
        (by_step, curves.bytes_by_step, "steps (30-key run)"),
    ):
        for curve in series:
            if curve.points:
                xs, ys = zip(*curve.points, strict=True)
                axes.plot(xs, [y / 2**20 for y in ys], marker="o", label=curve.label)
        axes.set_xlabel(unit)
        axes.set_ylabel("bytes stored (MiB)")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    figure.suptitle(f"{_title(results)}: bytes stored against turns and steps")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _throughput(plt: Any, results: BackendResults, curves: Curves, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for curve in curves.throughput:
        if curve.points:
            agents, writes, _turns = zip(*curve.points, strict=True)
            axes.plot(agents, writes, marker="o", label=curve.label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("concurrent agents")
    axes.set_ylabel("saturated writes/s")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    axes.set_title(f"{_title(results)}: throughput against concurrent agents")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_plots(all_results: list[BackendResults], directory: Path) -> list[Path]:
    """Write every backend's plots into ``directory``; the paths written."""
    plt = _pyplot()
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for results in all_results:
        curves = results.curves
        if curves is None:
            continue
        for suffix, draw in (
            ("commit-cost", _commit_cost),
            ("bytes", _bytes),
            ("throughput", _throughput),
        ):
            path = directory / f"{results.dialect}-{suffix}.png"
            draw(plt, results, curves, path)
            written.append(path)
    return written
