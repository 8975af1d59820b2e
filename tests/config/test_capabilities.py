"""What each config model declares it can take (``CAPABILITIES``), as ``rlcli validate`` reads it without
``--build``: a config that asks an algorithm for masks, memory, a dataset or gSDE it cannot take exits 2,
naming the file, the field and the algorithms that can; the lists derived from the declarations agree with
what the algorithms' code does."""

from __future__ import annotations

import pytest

from rlcli.algos import ALGORITHMS
from rlcli.config.algos import ALGO_CONFIGS, OFFLINE, SAMPLING, TEAMS, WITH_GSDE, WITH_MASKS, WITH_MEMORY

ONLINE = '[env]\nid = "{env_id}"\n{env}\n[algo]\nname = "{name}"\n{algo}\n{source}\n{network}\n'
DATA = '[data]\ndataset = "rlcli/nowhere-v0"\n'

# Each ask: where it is written in the config, the field the refusal names and who can take it.
ASKS = {
    "masks": ("env", 'action_mask = "info"', "env.action_mask"),
    "memory": ("network", '[network]\nmemory = "lstm"', "network.memory"),
    "dataset": ("source", DATA, "data"),
    "gsde": ("algo", "use_sde = true", "algo.use_sde"),
}


def takes(name: str, ask: str) -> bool:
    online = "collector" in ALGO_CONFIGS[name].CAPABILITIES.sources
    return {
        "masks": name in WITH_MASKS and online,
        "memory": name in WITH_MEMORY,
        "dataset": name in OFFLINE,
        "gsde": name in WITH_GSDE,
    }[ask]


def capable(ask: str, asker: str) -> list[str]:
    """The algorithms a refusal of ``asker`` names: for masks, those that learn from envs of its kind (team
    envs for a team algorithm, the others for the rest)."""
    teams = asker in TEAMS
    return [name for name in ALGO_CONFIGS if takes(name, ask) and (ask != "masks" or (name in TEAMS) == teams)]


def config_text(name: str, ask: str) -> str:
    online = "collector" in ALGO_CONFIGS[name].CAPABILITIES.sources
    parts = {"env": "", "algo": "", "source": "" if online else DATA, "network": ""}
    where, text, _ = ASKS[ask]
    parts[where] = DATA if where == "source" else text
    # A team algorithm asks on a team env.
    return ONLINE.format(name=name, env_id="vmas/balance" if name in TEAMS else "CartPole-v1", **parts)


@pytest.mark.parametrize("name", list(ALGO_CONFIGS))
@pytest.mark.parametrize("ask", list(ASKS))
def test_validate_refuses_what_the_algorithm_cannot_take(cli, write_toml, name, ask):
    if name in TEAMS:
        pytest.importorskip("vmas")
    path = write_toml(f"{name}_{ask}.toml", config_text(name, ask))
    result = cli("validate", path)
    output = result.stdout + result.stderr
    field = ASKS[ask][2]
    assert "Traceback" not in output, output
    if takes(name, ask):
        assert f"{field}:" not in output, output
        return
    assert result.returncode == 2, output
    assert path.name in output and f"{field}:" in output, output
    # The refusal names the algorithms that can (the dataset's: those that learn from one).
    assert ", ".join(capable(ask, name)) in " ".join(output.split()), output


def test_the_declarations_give_the_known_lists():
    # TRPO and QR-DQN mask too: the hand-kept lists that named four algorithms had drifted (issue 45).
    assert {"ppo", "a2c", "reinforce", "trpo", "dqn", "qrdqn"} <= set(WITH_MASKS)
    assert {"ppo", "a2c", "reinforce"} <= set(WITH_MEMORY) and not {"trpo", "sac", "bc"} & set(WITH_MEMORY)
    assert {"td3", "bc", "iql", "cql"} <= set(OFFLINE) and "ppo" not in OFFLINE
    assert {"ppo", "a2c", "trpo", "sac", "tqc"} <= set(WITH_GSDE) and "dqn" not in WITH_GSDE
    # Export's message groups every algorithm by when its policy samples.
    assert all(spec.capabilities.title in SAMPLING for spec in ALGORITHMS.values())
    assert "TRPO" in SAMPLING and "(their action distribution); DQN and QR-DQN with epsilon_end > 0" in SAMPLING


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_declared_spaces_are_the_gymnasium_classes_the_checks_read(name):
    spec = ALGORITHMS[name]
    caps = spec.capabilities
    assert [c.__name__ for c in spec.supports["observation"]] == list(caps.observations)
    assert [c.__name__ for c in spec.supports["action"]] == list(caps.actions)
    masks = spec.supports.get("action_mask", ())
    assert [c.__name__ for c in masks] == list(caps.masks.actions if caps.masks else ())
    assert set(masks) <= set(spec.supports["action"])


def test_the_type_checkers_algo_union_names_every_config_model():
    """The AlgoConfig that mypy reads (written out under TYPE_CHECKING) names the models ALGO_CONFIGS holds."""
    import ast
    import inspect

    import rlcli.config.algos as algos

    tree = ast.parse(inspect.getsource(algos))
    checked = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    union = checked.body[0].value.slice
    assert {ast.unparse(name) for name in union.elts} == {model.__name__ for model in algos.ALGO_CONFIGS.values()}
