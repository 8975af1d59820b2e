from types import SimpleNamespace

from rich.console import Console

from rlcli.trainer.report import summary_table


def test_summary_prints_error_text_with_brackets_as_written():
    state = SimpleNamespace(
        status="failed",
        frames=512,
        iteration=1,
        wall_time=0.5,
        fps=1024.0,
        best_return=float("nan"),
        last_return=float("nan"),
        solved_at=None,
        error="RuntimeError: bad value at [preset=ppo_cartpole]",
        last_eval={},
        final_eval=None,
        checkpoint_path=None,
        run=SimpleNamespace(
            cfg=SimpleNamespace(run=SimpleNamespace(stop_at_return=None, return_window=100), offline=False),
            source=SimpleNamespace(unit="frames"),
        ),
    )
    console = Console(record=True, width=200)
    console.print(summary_table(state))
    assert "[preset=ppo_cartpole]" in console.export_text()
