"""Networks and what runs inside them: MLPs, policy heads over torch.distributions (gSDE's
state-dependent noise included), actors and critics (ensembles as one batched module), the encoder
of each observation space, memory cores, running normalization, compilation and bf16."""
