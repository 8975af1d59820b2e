"""Networks: MLPs, policy heads over torch.distributions, critics."""
