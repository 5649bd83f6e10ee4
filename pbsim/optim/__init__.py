"""Per-trajectory optimisers written as kernels: Levenberg-Marquardt and LBFGS (paper 000 Sec. 5)."""
