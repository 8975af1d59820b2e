"""``rlcli export``: a trained run's policy as one file that maps raw env observations to env actions,
for ONNX runtimes (``.onnx``, through ``torch.onnx``'s dynamo exporter) or torch (``.pt2``, a
``torch.export`` program that ``torch.export.load`` reads and AOTInductor can compile).

The file holds what evaluation applies between an observation and the env: the saved observation
normalization, the encoder (uint8 frames scaled inside), the policy, its mode (argmax, the squashed or
plain Gaussian mean; or, exported ``stochastic``, a draw from the policy, as ``rlcli eval --stochastic``
takes it) and the clipping to the action bounds. Every algorithm's agent goes through the one
:meth:`rlcli.algos.Agent.actions` path that evaluation calls, so nothing here is per algorithm.

Inputs, in order (names as in the ONNX file and in the metadata's ``inputs``):

- ``obs``: [B, *obs] in the observation space's dtype; a ``Dict`` observation gives one input per key,
  ``obs.<key>``, in the space's key order;
- ``action_mask``: [B, A] bool (True: allowed), where the run acted under masks;
- ``memory`` ([B, *state] float32) and ``first`` ([B] bool), for a policy with memory: the state the last
  call returned, zeros before an env's first step, and whether the observation starts an episode (the
  state is then zeroed inside, as training did).

Outputs: ``action`` [B, *action] in the action space's dtype (int64 for discrete actions), then
``next_memory`` (the state to pass as ``memory`` to the next call) for a policy with memory.

A team run's policies are one file per group (:mod:`~rlcli.play.export.teams`, :func:`export_team`).

The metadata (ONNX ``metadata_props["rlcli"]``; the pt2 archive's extra file ``rlcli.json``) is a JSON
object: env id, spaces, the inputs' and outputs' names, the algorithm, the rlcli and torch versions, the
run's config hash and frames.

:mod:`~rlcli.play.export.deployed_policy` holds the module a file is traced from, its example inputs and the
file's metadata; :mod:`~rlcli.play.export.write` the export itself and the two writers;
:mod:`~rlcli.play.export.forensics` the reading of an exporter's failure (which operator, in which
submodule).
"""

from rlcli.play.export.deployed_policy import DeployedPolicy, deployed, deployed_untrained, examples_for
from rlcli.play.export.write import export_policy, export_team, exports, write_file

__all__ = [
    "DeployedPolicy",
    "deployed",
    "deployed_untrained",
    "examples_for",
    "export_policy",
    "export_team",
    "exports",
    "write_file",
]
