"""The offline presets' cases, which the ``update`` and ``offpolicy`` suites time beside the online
ones: the shipped offline presets on their datasets (or a stand-in of random actions where a dataset
is not here), and IQL's and CQL's gradient steps beside their bare-torch floors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from rlcli.algos.cql import CQL
from rlcli.algos.iql import IQL
from rlcli.bench.floors.offline import BareCQL, BareIQL
from rlcli.bench.measure import Case, Ratio
from rlcli.bench.suites.options import BenchOptions, env_available, floor_call, update_call
from rlcli.config.algos.offline import CQLConfig, IQLConfig
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.config.recipes import RECIPES
from rlcli.run import build_run
from rlcli.timing import Timer

if TYPE_CHECKING:
    from tensordict import TensorDict

    from rlcli.algos import Algorithm
    from rlcli.config.schema import RunConfig
    from rlcli.config.sources import DataConfig


def offline_configs(opts: BenchOptions, *extra: str, steps_per_iteration: int = 64) -> dict[str, RunConfig]:
    """Every shipped offline preset whose env can be made here, on the bench device, ``steps_per_iteration``
    gradient steps an iteration, reading its dataset, or where that is not here (``rlcli datasets make`` or
    ``minari download`` puts it there) a stand-in of 10k random steps on its env: the cost of a gradient
    step does not depend on the data. Those on datasets rlcli makes come first, so that the suites that
    time one preset per algorithm keep timing the ones they always did. Empty when minari is not installed."""
    try:
        import minari  # noqa: F401
    except ImportError:
        return {}
    from rlcli.config.errors import InputError
    from rlcli.datasets import resolve
    from rlcli.datasets.recording import record_random

    offline = [name for name in available_presets() if load_config(name).offline]
    # sorted() is stable: the presets on rlcli's own datasets first, each group in name order.
    offline.sort(key=lambda name: _data(load_config(name)).dataset not in RECIPES)
    configs = {}
    for name in offline:
        cfg = load_config(
            name,
            [
                f'run.device="{opts.device}"',
                "timing.enabled=false",
                f"data.steps_per_iteration={steps_per_iteration}",
                opts.threads_setting,
                *extra,
            ],
        )
        if not env_available(cfg.env.id):
            continue
        data = _data(cfg)
        try:
            resolve(data.dataset)
            dataset = data.dataset
        except InputError:
            dataset = _stand_in_dataset(opts, cfg.env, record_random)
        configs[name] = cfg.model_copy(update={"data": data.model_copy(update={"dataset": dataset})})
    return configs


def _data(cfg: RunConfig) -> DataConfig:
    """The ``[data]`` section of the offline preset ``cfg``."""
    # An offline run is one with a [data] section (RunConfig.offline), the only kind listed here.
    assert cfg.data is not None
    return cfg.data


def _stand_in_dataset(opts: BenchOptions, env_cfg, record_random) -> str:
    """The path of a dataset of random actions on ``env_cfg``'s env, written once per bench in its
    scratch folder."""
    if env_cfg.id not in opts.stand_ins:
        folder = opts.scratch / f"data-{len(opts.stand_ins)}"
        recorded = record_random(env_cfg, steps=10_000, out=str(folder / "random-v0"))
        opts.stand_ins[env_cfg.id] = str(recorded.path)
    return opts.stand_ins[env_cfg.id]


def offline_updates(opts: BenchOptions) -> tuple[list[Case], list[Ratio]]:
    """IQL's and CQL's whole gradient step (their presets, with 256x256 networks as SAC's case and the
    papers') beside the same maths in bare torch (:class:`BareIQL`, :class:`BareCQL`), on a minibatch of
    the preset's dataset."""
    cases: list[Case] = []
    ratios: list[Ratio] = []
    floors = {
        "iql": lambda algo, a: BareIQL(
            algo, gamma=a.gamma, tau=a.tau, expectile=a.expectile, beta=a.beta, max_weight=a.max_weight
        ),
        "cql": lambda algo, a: BareCQL(
            algo, gamma=a.gamma, tau=a.tau, weight=a.conservative_weight, samples=a.num_random_actions
        ),
    }
    chosen: dict[str, RunConfig] = {}
    for cfg in offline_configs(opts, "network.hidden_sizes=[256,256]").values():
        if cfg.algo.name in floors:
            chosen.setdefault(cfg.algo.name, cfg)
    for name, cfg in chosen.items():
        run = build_run(cfg)
        run.close()
        algo, timer = run.algo, Timer(run.device)
        # ``floors`` has IQL and CQL only, so the chosen presets build those, from their configs.
        assert isinstance(algo, (IQL, CQL)) and isinstance(cfg.algo, (IQLConfig, CQLConfig))
        sample = algo.replay.sample(cfg.algo.batch_size, torch.Generator(device=run.device).manual_seed(0))
        params = {"batch": cfg.algo.batch_size, "hidden": "x".join(map(str, cfg.network.hidden_sizes))}
        cases.append(
            Case(
                "offpolicy",
                f"{name}.update",
                params,
                "calls/s",
                1,
                update_call(algo, sample, timer),
            )
        )
        bare = floors[name](algo, cfg.algo)
        cases.append(
            Case(
                "offpolicy",
                f"{name}.bare_torch_update",
                params,
                "calls/s",
                1,
                floor_call(bare, sample),
            )
        )
        ratios.append(
            Ratio(
                "offpolicy", f"{name}.update.slowdown_vs_bare_torch", params, "slowdown", cases[-1].key, cases[-2].key
            )
        )
    return cases, ratios


def offline_iterations(opts: BenchOptions) -> list[Case]:
    """An iteration of each offline preset (its gradient steps on its dataset), as gradient steps/s."""
    cases = []
    for name, cfg in offline_configs(opts).items():
        run = build_run(cfg)
        run.close()
        algo, timer = run.algo, Timer(run.device)
        batch = run.source.next_batch(timer)
        steps = _data(cfg).steps_per_iteration
        cases.append(
            Case(
                "update",
                name,
                {"steps_per_iteration": steps},
                "gradient steps/s",
                steps,
                _learn_call(algo, batch, timer),
            )
        )
    return cases


def _learn_call(algo: Algorithm, batch: TensorDict, timer: Timer) -> Callable[[], dict[str, float]]:
    """The timed call of ``algo``'s whole iteration on ``batch`` (its objects as defaults, as in
    :func:`~rlcli.bench.suites.options.update_call`)."""

    def run(algo: Algorithm = algo, batch: TensorDict = batch, timer: Timer = timer) -> dict[str, float]:
        return algo.learn(batch, timer)

    return run
