"""The checks of ``[network] memory`` against the other sections: which algorithms have memory, and the
sequences a recurrent update cuts the rollout into."""

from __future__ import annotations

from rlcli.config.algos import WITH_MEMORY


def memory_problems(algo, network, collector, env) -> list[tuple[str, str]]:
    """Problems of ``[network] memory`` with the algorithm and the rollout's shape (none without memory)."""
    if algo is None or network is None or network.memory == "none":
        return []
    if algo.name not in WITH_MEMORY:
        return [
            (
                "network.memory",
                f"{algo.name} has no memory; the algorithms with memory: {', '.join(WITH_MEMORY)} "
                '(set memory = "none" for this one)',
            )
        ]
    problems = []
    if getattr(algo, "share_params", True) is False:
        problems.append(
            (
                "network.memory",
                "a memory core needs the group's agents to share their weights (share_params = true): agents with "
                'weights of their own take no memory core yet (set memory = "none" or share_params = true)',
            )
        )
    if network.memory_shared and not network.share_encoder:
        problems.append(
            ("network.memory_shared", "one memory core for the policy and the value needs share_encoder = true")
        )
    if collector is None or env is None or collector.frames_per_batch % env.num_envs:
        return problems
    steps = collector.frames_per_batch // env.num_envs
    length = algo.sequence(steps)
    if steps % length:
        problems.append(
            (
                "algo.sequence_length",
                f"sequences of {length} steps must divide each env's rollout of {steps} steps "
                "(collector.frames_per_batch / env.num_envs)",
            )
        )
    if algo.update_batch is not None and algo.update_batch % length:
        problems.append(
            (
                "algo.sequence_length",
                f"sequences of {length} steps must divide the minibatch of {algo.update_batch} "
                "(a minibatch holds whole sequences)",
            )
        )
    return problems
