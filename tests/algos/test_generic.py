"""Checks every algorithm in the table gets for free, derived from its record (``rlcli.algos.ALGORITHMS``):
``supports``, ``phases`` and ``metrics``."""

import copy
import math

import gymnasium as gym
import pytest
import torch

import rlcli.algos
from rlcli.algos import ALGORITHMS, Benchable
from rlcli.algos.context import BuildContext
from rlcli.config.errors import ConfigError
from rlcli.config.load import validate_data
from rlcli.learning.off_policy import ReplayLearner
from rlcli.run import build_run
from rlcli.timing import Timer
from rlcli.trainer.loop import train
from support.offline import random_dataset
from support.run_folders import rows_of

ENVS = ["CartPole-v1", "Pendulum-v1"]
# The single-agent algorithms, which these envs serve; the team algorithms' own checks are in test_teams_generic.py.
SINGLE = sorted(name for name, spec in ALGORITHMS.items() if not spec.capabilities.teams)
LOOP_PHASES = {"collect", "collect.policy", "collect.env_step", "update", "log", "iteration"}


def supported(name: str, env_id: str) -> bool:
    env = gym.make(env_id)
    try:
        spec = ALGORITHMS[name]
        return isinstance(env.observation_space, spec.supports["observation"]) and isinstance(
            env.action_space, spec.supports["action"]
        )
    finally:
        env.close()


def config(name: str, env_id: str, seed: int = 1, **sections):
    """A small run of ``name`` on 4 envs of ``env_id``; ``sections`` update its sections key by key."""
    spec = ALGORITHMS[name]
    algo = {"name": name}
    # Small batches so that a few iterations are enough to learn something.
    for field, value in (("minibatch_size", 32), ("batch_size", 16), ("learning_starts", 64)):
        if field in spec.config.model_fields:
            algo[field] = value
    if "replay" in spec.config.model_fields:
        algo["replay"] = {"capacity": 1000}
    # An offline algorithm learns from a small dataset of random actions on the env, 8 steps an iteration.
    source = (
        {"collector": {"frames_per_batch": 64, "total_frames": 640}}
        if "collector" in spec.capabilities.sources
        else {"data": {"dataset": random_dataset(env_id), "total_steps": 80, "steps_per_iteration": 8}}
    )
    data = {
        "run": {"seed": seed, "device": "cpu"},
        "env": {"id": env_id, "num_envs": 4, "vectorization": "sync"},
        "algo": algo,
        **source,
    }
    for section, values in sections.items():
        data[section] = {**data.get(section, {}), **values}
    return validate_data(data)


PAIRS = [(name, env_id) for name in SINGLE for env_id in ENVS if supported(name, env_id)]
UNSUPPORTED = [(name, env_id) for name in SINGLE for env_id in ENVS if not supported(name, env_id)]


def learn_until_loss(run, timer, limit: int = 5) -> dict[str, float]:
    """Collect and learn until ``learn`` reports a loss (off-policy methods warm up first)."""
    for _ in range(limit):
        terms = run.algo.learn(run.source.next_batch(timer), timer)
        if any(key.startswith("loss/") for key in terms):
            return terms
    pytest.fail(f"no loss term after {limit} iterations: {terms}")


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_learn_reports_its_metrics_times_its_phases_and_changes_weights(name, env_id):
    spec = ALGORITHMS[name]
    run = build_run(config(name, env_id))
    try:
        before = [p.detach().clone() for p in run.algo.agent.parameters()]
        timer = Timer(run.device)
        terms = learn_until_loss(run, timer)
    finally:
        run.close()
    assert set(terms) <= set(spec.metrics), set(terms) - set(spec.metrics)
    assert "loss/total" in terms and "optim/lr" in terms
    assert all(math.isfinite(v) for v in terms.values()), terms
    changed = [not torch.equal(a, b) for a, b in zip(before, run.algo.agent.parameters())]
    assert any(changed)
    assert {"update.forward", "update.backward", "update.optimizer"} <= set(timer.current)
    assert set(timer.current) <= LOOP_PHASES | set(spec.phases), set(timer.current) - set(spec.phases)


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_run_columns_come_from_the_record(name, env_id):
    spec = ALGORITHMS[name]
    run = build_run(config(name, env_id))
    run.close()
    assert run.metrics == tuple(spec.metrics)
    assert set(spec.phases) <= set(run.phases)
    # Sub-phases follow their parent in the display order.
    assert run.phases.index("update") < min(run.phases.index(p) for p in spec.phases)


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_state_dict_round_trips_into_a_fresh_build(name, env_id):
    run = build_run(config(name, env_id))
    try:
        timer = Timer(run.device)
        learn_until_loss(run, timer)
        agent_state = {k: v.clone() for k, v in run.algo.agent.state_dict().items()}
        algo_state = run.algo.state_dict()
    finally:
        run.close()
    fresh = build_run(config(name, env_id, seed=7))
    try:
        fresh.algo.agent.load_state_dict(agent_state)
        fresh.algo.load_state_dict(algo_state)
        reloaded = fresh.algo.state_dict()
    finally:
        fresh.close()
    assert_same(reloaded, algo_state)
    for key, value in agent_state.items():
        assert torch.equal(fresh.algo.agent.state_dict()[key], value), key
    # What the next collect and row read, beside the state: DQN's epsilon, PPO's clip.
    for path in ("exploration.epsilon", "clip_epsilon"):
        assert attribute(fresh.algo, path) == attribute(run.algo, path), path


def attribute(owner, path: str):
    """The attribute at dotted ``path`` of ``owner``; None where a part is missing."""
    for name in path.split("."):
        owner = getattr(owner, name, None)
    return owner


def test_dqn_keeps_its_saved_epsilon_when_a_resume_raises_the_frame_budget(cartpole_dqn):
    run = cartpole_dqn(learning_starts=32, exploration_fraction=0.5)
    try:
        timer = Timer(run.device)
        for _ in range(3):
            run.algo.learn(run.source.next_batch(timer), timer)
        state, epsilon = run.algo.state_dict(), run.algo.exploration.epsilon
    finally:
        run.close()
    longer = cartpole_dqn(learning_starts=32, exploration_fraction=0.5)
    longer.close()
    # A resume may raise total_frames: the decay's horizon moves, the epsilon in use does not.
    longer.algo.exploration.decay_frames *= 10
    longer.algo.load_state_dict(state)
    assert 0.0 < epsilon < 1.0 and longer.algo.exploration.epsilon == epsilon


def assert_same(a, b, where: str = "state") -> None:
    """Nested state dicts equal: same keys, equal tensors, equal plain values."""
    assert type(a) is type(b), where
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for index, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{index}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b, where


@pytest.mark.parametrize(("name", "env_id"), UNSUPPORTED)
def test_an_unsupported_space_is_a_config_error_naming_it(name, env_id):
    with pytest.raises(ConfigError) as info:
        build_run(config(name, env_id))
    text = info.value.render()
    assert env_id in text and name in text and "supported" in text and "Box" in text


@pytest.mark.parametrize("name", SINGLE)
def test_unsupported_observation_space_is_a_config_error(name):
    algo = {"name": name} | ({"minibatch_size": 32} if name == "ppo" else {})
    source = (
        {"collector": {"frames_per_batch": 64, "total_frames": 640}}
        if "collector" in ALGORITHMS[name].capabilities.sources
        else {"data": {"dataset": random_dataset("Blackjack-v1")}}
    )
    cfg = validate_data(
        {
            "env": {"id": "Blackjack-v1", "num_envs": 2},
            "algo": algo,
            **source,
        }
    )
    with pytest.raises(ConfigError) as info:
        build_run(cfg)
    text = info.value.render()
    assert "Blackjack-v1" in text and "Tuple" in text and "supported" in text


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_record_has_the_table_interface(name):
    spec = ALGORITHMS[name]
    assert spec.config.model_fields["name"].annotation.__args__ == (name,) and spec.name == name
    # rlcli.algos.<name> ends with its own record (DDPG's is TD3's with its own config).
    assert getattr(rlcli.algos, name).SPEC is spec
    # "action_mask": the action spaces whose masks it applies, for those that can.
    assert {"observation", "action"} <= set(spec.supports) <= {"observation", "action", "action_mask"}
    assert all(phase.startswith("update.") for phase in spec.phases)
    assert all(key.split("/")[0] in {"loss", "stats", "optim"} for key in spec.metrics)
    assert callable(spec.build) and callable(spec.build_agent)


def test_the_config_table_and_the_algorithm_table_agree():
    from rlcli.config.algos import ALGO_CONFIGS

    assert list(ALGO_CONFIGS) == list(ALGORITHMS)
    for name, spec in ALGORITHMS.items():
        assert spec.config is ALGO_CONFIGS[name] and spec.capabilities is ALGO_CONFIGS[name].CAPABILITIES
        assert spec.config.model_fields["name"].annotation.__args__ == (name,)


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_policy_is_a_pure_function_of_weights_observation_and_generator(name, env_id):
    run = build_run(config(name, env_id))
    try:
        act_space = run.source.action_space
        shape = run.source.observation_space.shape
        observation = torch.randn(5, *shape, generator=torch.Generator().manual_seed(3))
        agent_state = {k: v.clone() for k, v in run.algo.agent.state_dict().items()}
        algo_state = run.algo.state_dict()
        global_rng = torch.get_rng_state()

        first = run.algo.agent.actions(observation, deterministic=True, generator=torch.Generator().manual_seed(0))
        second = run.algo.agent.actions(observation, deterministic=True, generator=torch.Generator().manual_seed(1))
        sampled = [
            run.algo.agent.actions(observation, deterministic=False, generator=torch.Generator().manual_seed(5))
            for _ in range(2)
        ]

        assert torch.equal(first, second)
        assert torch.equal(*sampled)
        assert not first.requires_grad and not sampled[0].requires_grad
        for key, value in run.algo.agent.state_dict().items():
            assert torch.equal(value, agent_state[key]), key
        assert_same(run.algo.state_dict(), algo_state)
        assert torch.equal(torch.get_rng_state(), global_rng)
    finally:
        run.close()
    for action in (first, *sampled):
        if isinstance(act_space, gym.spaces.Discrete):
            assert action.shape == (5,) and action.dtype == torch.int64
            assert 0 <= int(action.min()) and int(action.max()) < act_space.n
        else:
            assert action.shape == (5, *act_space.shape) and action.dtype == torch.float32
            # The Gaussian of PPO, A2C and REINFORCE is unbounded (the caller clips); the others stay inside.
            if name not in ("ppo", "a2c", "reinforce"):
                low, high = torch.as_tensor(act_space.low), torch.as_tensor(act_space.high)
                assert bool(((action >= low) & (action <= high)).all()), action


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_benchable_ingest_and_sample_then_loss_give_a_finite_total_with_gradients(name, env_id):
    run = build_run(config(name, env_id))
    try:
        algo: Benchable = run.algo
        timer = Timer(run.device)
        # Past any warm-up, as the bench takes its minibatches.
        for _ in range(2):
            batch = run.source.next_batch(timer)
        minibatch = algo.ingest_and_sample(batch.clone(), 16, torch.Generator().manual_seed(0))
        terms = algo.loss(minibatch)
    finally:
        run.close()
    # Only an algorithm that learns from envs acts: nothing collects with an offline-only one.
    assert hasattr(algo, "act") == ("collector" in ALGORITHMS[name].config.CAPABILITIES.sources)
    assert minibatch.batch_size == torch.Size([16])
    total = terms["loss/total"]
    assert total.dim() == 0 and math.isfinite(float(total.detach())) and total.requires_grad
    # Every term it names is one its learn reports as a column.
    reported = {k for k in terms if k.startswith(("loss/", "stats/"))}
    assert reported <= set(ALGORITHMS[name].metrics), reported - set(ALGORITHMS[name].metrics)
    total.backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in run.algo.agent.parameters())


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_a_replay_algorithms_loss_forms_the_terms_its_update_steps_on(name, env_id):
    run = build_run(config(name, env_id))
    try:
        algo = run.algo
        if not isinstance(getattr(algo, "learner", None), ReplayLearner):
            pytest.skip("an on-policy algorithm: no update of one replay sample")
        timer = Timer(run.device)
        for _ in range(2):
            batch = run.source.next_batch(timer)
        sample = algo.ingest_and_sample(batch.clone(), 16, torch.Generator().manual_seed(0))
        agent_state = copy.deepcopy(algo.agent.state_dict())
        algo_state = copy.deepcopy(algo.state_dict())
        parameters = [p.detach().clone() for p in algo.agent.parameters()]
        from_loss = algo.loss(sample)
        # loss takes no step: the weights are those it started from.
        assert all(torch.equal(a, b) for a, b in zip(parameters, algo.agent.parameters()))
        # The same weights, generators and counters again, for update.
        algo.agent.load_state_dict(agent_state)
        algo.load_state_dict(algo_state)
        from_update = algo.update(sample, timer)
    finally:
        run.close()
    assert set(from_update) <= set(from_loss), set(from_update) - set(from_loss)
    # The first term an update forms, before any step, is the very one loss gave: the same function.
    first = next(key for key in from_update if key.startswith("loss/"))
    assert torch.equal(from_update[first].detach(), from_loss[first].detach()), first


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_build_agent_gives_the_agent_build_gives_without_optimizer_or_replay(name, env_id):
    cfg = config(name, env_id)
    run = build_run(cfg)
    try:
        ctx = BuildContext(
            run.source.observation_space,
            run.source.action_space,
            network=cfg.network,
            env=cfg.env,
            collector=cfg.collector,
            optim=cfg.optim,
            device=run.device,
            seed=cfg.run.seed,
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.run.seed)
            agent = ALGORITHMS[name].build_agent(cfg.algo, ctx)
        full = run.algo.agent.state_dict()
    finally:
        run.close()
    light = agent.state_dict()
    assert list(light) == list(full)
    for key, value in light.items():
        assert torch.equal(value, full[key]), key


@pytest.mark.parametrize(("name", "env_id"), PAIRS)
def test_build_agent_makes_no_optimizer_and_no_replay_buffer(name, env_id, monkeypatch):
    cfg = config(name, env_id)
    env = gym.make(env_id)
    ctx = BuildContext(
        env.observation_space,
        env.action_space,
        network=cfg.network,
        env=cfg.env,
        collector=cfg.collector,
        optim=cfg.optim,
        device=torch.device("cpu"),
        seed=0,
    )
    env.close()

    def refuse(*args, **kwargs):
        raise AssertionError("build_agent made an optimizer or a replay buffer")

    for target in (
        "rlcli.learning.optim.GradientStep.__init__",
        "rlcli.learning.optim.make_optimizer",
        "rlcli.replay.storage.ReplayBuffer.__init__",
        "rlcli.replay.feed.check_storage",
        "rlcli.models.normalization.RewardScaler.__init__",
    ):
        monkeypatch.setattr(target, refuse)
    agent = ALGORITHMS[name].build_agent(cfg.algo, ctx)
    assert callable(agent.actions)


# Each algorithm on the first env of ENVS it supports.
FIRST_PAIRS = [next(pair for pair in PAIRS if pair[0] == name) for name in SINGLE]


def train_briefly(name: str, env_id: str, seed: int, out) -> tuple[list[dict[str, str]], dict]:
    """Train ``name`` on ``env_id`` through the trainer's loop for three iterations of 32 frames (offline:
    two of 8 steps), learning in the last at the latest; returns its metrics rows without the columns that
    measure time, and its final.pt (weights, optimizer state, generators, counters)."""
    budget = (
        {"collector": {"frames_per_batch": 32, "total_frames": 96}}
        if "collector" in ALGORITHMS[name].config.CAPABILITIES.sources
        else {"data": {"total_steps": 16}}
    )
    cfg = config(
        name,
        env_id,
        seed=seed,
        run={"output_dir": str(out)},
        eval={"final_episodes": 0},
        timing={"enabled": False},
        **budget,
    )
    state = train(build_run(cfg))
    return rows_of(state.run_dir), torch.load(state.run_dir / "final.pt", map_location="cpu", weights_only=True)


@pytest.mark.parametrize(("name", "env_id"), FIRST_PAIRS)
def test_one_config_and_seed_train_alike_twice_and_another_seed_does_not(name, env_id, tmp_path):
    # Each run starts on the torch thread count the process had, as each would in a fresh process: a run
    # builds its networks before it sets its own count (rlcli.run), and an initialization on two threads
    # differs in the last bits from one on one thread (this test found it; the CLI starts one run a process).
    threads = torch.get_num_threads()
    rows, final = train_briefly(name, env_id, 3, tmp_path / "first")
    torch.set_num_threads(threads)
    again_rows, again_final = train_briefly(name, env_id, 3, tmp_path / "again")
    torch.set_num_threads(threads)
    assert any(key.startswith("loss/") and value for row in rows for key, value in row.items()), rows
    assert again_rows == rows
    assert_same(again_final, final, "final.pt")
    _, other = train_briefly(name, env_id, 4, tmp_path / "other")
    assert any(not torch.equal(value, final["agent"][key]) for key, value in other["agent"].items()), (
        "seed 4 trained exactly like seed 3: the seed reaches nothing"
    )
