"""Per-trajectory optimisers written as kernels (paper 000 Sec. 5): the one Levenberg-Marquardt
loop (:mod:`.lm`, generic over the problem), LBFGS (:mod:`.lbfgs`), dense linear algebra
(:mod:`.linalg`), a small dense convex QP with box / friction-cone / simplex blocks (:mod:`.qp`: FISTA, and a
primal active-set method for simplex / box blocks);
and the host-level sub-stepping on failure of the implicit methods (:mod:`.substep`)."""
