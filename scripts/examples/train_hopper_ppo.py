"""PPO in numpy on pbsim/Hopper-v0's native vector env (issue #21): learns to hop in bounded time.

A compact PPO (clipped surrogate, GAE, observation normalization, reward scaling, Adam, global
gradient clipping) with two tanh MLPs (policy mean and value, 64 x 64) and a state-independent
log std, all in numpy with hand-written backprop: no torch, no RL library.  The environment is
``gymnasium.make_vec("pbsim/Hopper-v0", num_envs=N, vectorization_mode="vector_entry_point")``:
all N hoppers step in one batched kernel call (euler, dt 2 ms x 4, Hopper-v5's reward).  The run
stops after ``--minutes`` of wall time or ``--steps`` environment steps, whichever comes first,
evaluates the deterministic policy (the mean action) every ``--eval-every`` updates on 8 episodes,
and writes the learning curve (docs/img/train_hopper_ppo.png) and the policy
(docs/controllers/hopper_ppo.npz: weights and the observation normalizer).

    python scripts/examples/train_hopper_ppo.py                  # 10 minutes
    python scripts/examples/train_hopper_ppo.py --minutes 2 --plot /tmp/ppo.png --out /tmp/ppo.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# one BLAS thread: the networks' matrices are small (512 x 64), and threaded BLAS next to numba's
# batch threads on 2 cores made a minibatch's backward pass 27 ms instead of well under 1 ms
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import gymnasium

import pbsim.envs  # noqa: F401 - registers pbsim/Hopper-v0


class MLP:
    """tanh MLP with a linear output layer; ``forward`` keeps what ``backward`` needs."""

    def __init__(self, sizes, rng, out_scale=1.0):
        self.W, self.b = [], []
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            gain = out_scale if i == len(sizes) - 2 else np.sqrt(2.0)
            q, _ = np.linalg.qr(rng.standard_normal((max(m, n), min(m, n))))  # orthogonal init
            W = (q if m >= n else q.T)[:m, :n] * gain
            self.W.append(W)
            self.b.append(np.zeros(n))

    def params(self):
        return self.W + self.b

    def forward(self, x):
        self.acts = [x]
        for i, (W, b) in enumerate(zip(self.W, self.b)):
            x = x @ W + b
            if i < len(self.W) - 1:
                x = np.tanh(x)
            self.acts.append(x)
        return x

    def backward(self, dout):
        """Gradients (same order as ``params``) of sum(dout * output)."""
        gW, gb = [None] * len(self.W), [None] * len(self.W)
        d = dout
        for i in range(len(self.W) - 1, -1, -1):
            gW[i] = self.acts[i].T @ d
            gb[i] = d.sum(0)
            if i > 0:
                d = (d @ self.W[i].T) * (1.0 - self.acts[i] ** 2)
        return gW + gb


class Adam:
    def __init__(self, params, lr=3e-4, b1=0.9, b2=0.999, eps=1e-5):
        self.p, self.lr, self.b1, self.b2, self.eps, self.t = params, lr, b1, b2, eps, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads):
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for p, g, m, v in zip(self.p, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)  # in place: the networks see it


class RunningStat:
    """Running mean and variance (parallel update), for observation normalization and reward scaling."""

    def __init__(self, shape=()):
        self.mean, self.var, self.n = np.zeros(shape), np.ones(shape), 1e-4

    def update(self, x):
        bm, bv, bn = x.mean(0), x.var(0), x.shape[0]
        d, tot = bm - self.mean, self.n + bn
        self.mean = self.mean + d * bn / tot
        self.var = (self.var * self.n + bv * bn + d**2 * self.n * bn / tot) / tot
        self.n = tot


class Policy:
    def __init__(self, n_obs, n_act, rng, hidden=64, log_std=-0.5):
        self.pi = MLP([n_obs, hidden, hidden, n_act], rng, out_scale=0.01)
        self.vf = MLP([n_obs, hidden, hidden, 1], rng, out_scale=1.0)
        self.log_std = np.full(n_act, log_std)
        self.obs = RunningStat(n_obs)

    def norm(self, o):
        return np.clip((o - self.obs.mean) / np.sqrt(self.obs.var + 1e-8), -10, 10)

    def act(self, o, rng, deterministic=False):
        x = self.norm(o)
        mu = self.pi.forward(x)
        v = self.vf.forward(x)[:, 0]
        if deterministic:
            return mu, None, v
        a = mu + np.exp(self.log_std) * rng.standard_normal(mu.shape)
        return a, logp(a, mu, self.log_std), v

    def value(self, o):
        return self.vf.forward(self.norm(o))[:, 0]

    def save(self, path, **extra):
        np.savez(
            path,
            **{f"pi_W{i}": W for i, W in enumerate(self.pi.W)},
            **{f"pi_b{i}": b for i, b in enumerate(self.pi.b)},
            log_std=self.log_std,
            obs_mean=self.obs.mean,
            obs_var=self.obs.var,
            **extra,
        )


def logp(a, mu, log_std):
    z = (a - mu) / np.exp(log_std)
    return -0.5 * (z**2).sum(1) - log_std.sum() - 0.5 * a.shape[1] * np.log(2 * np.pi)


def evaluate(policy, episodes=8, seed=1000, **env_kw):
    """Mean and std of the deterministic policy's return over ``episodes`` episodes (one vector
    env of that many rows; each row's first episode counts), and the mean episode length."""
    envs = gymnasium.make_vec("pbsim/Hopper-v0", num_envs=episodes, vectorization_mode="vector_entry_point", **env_kw)
    obs, _ = envs.reset(seed=seed)
    ret, length = np.zeros(episodes), np.zeros(episodes, int)
    alive = np.ones(episodes, bool)
    while alive.any():
        mu, _, _ = policy.act(obs, None, deterministic=True)
        obs, r, term, trunc, _ = envs.step(np.clip(mu, -1, 1))
        ret += r * alive
        length += alive
        alive &= ~(term | trunc)
    envs.close()
    return float(ret.mean()), float(ret.std()), float(length.mean())


def train(
    num_envs=32,
    n_steps=128,
    epochs=10,
    minibatch=512,
    lr=3e-4,
    gamma=0.99,
    lam=0.95,
    clip=0.2,
    ent_coef=0.0,
    vf_coef=0.5,
    max_grad_norm=0.5,
    minutes=10.0,
    max_env_steps=10**8,
    eval_every=10,
    eval_episodes=8,
    seed=0,
    log=print,
    **env_kw,
):
    rng = np.random.default_rng(seed)
    envs = gymnasium.make_vec("pbsim/Hopper-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kw)
    n_obs, n_act = envs.single_observation_space.shape[0], envs.single_action_space.shape[0]
    pol = Policy(n_obs, n_act, rng)
    opt = Adam(pol.pi.params() + pol.vf.params() + [pol.log_std], lr=lr)
    ret_stat, disc_ret = RunningStat(), np.zeros(num_envs)
    obs, _ = envs.reset(seed=seed)
    pol.obs.update(obs)
    prev_done = np.zeros(num_envs, bool)
    ep_ret, ep_len = np.zeros(num_envs), np.zeros(num_envs, int)
    finished = []  # (env steps, return, length) of every training episode
    hist = {"env_steps": [], "wall_s": [], "train_return": [], "eval_steps": [], "eval_return": [], "eval_std": []}
    hist["eval_len"] = []
    t0 = time.perf_counter()
    total = 0
    init = evaluate(pol, eval_episodes, **env_kw)
    hist["eval_steps"].append(0)
    hist["eval_return"].append(init[0])
    hist["eval_std"].append(init[1])
    hist["eval_len"].append(init[2])
    log(f"initial policy: return {init[0]:.1f} +- {init[1]:.1f}, episode length {init[2]:.0f}")
    update = 0
    T, N = n_steps, num_envs
    while time.perf_counter() - t0 < minutes * 60 and total < max_env_steps:
        O = np.zeros((T, N, n_obs))
        A = np.zeros((T, N, n_act))
        LP, V, R, V_next = (np.zeros((T, N)) for _ in range(4))
        TERM, DONE, VALID = (np.zeros((T, N), bool) for _ in range(3))
        for t in range(T):
            a, lp, v = pol.act(obs, rng)
            O[t], A[t], LP[t], V[t] = obs, a, lp, v
            VALID[t] = ~prev_done  # a NEXT_STEP autoreset step only resets: not a transition
            obs, r, term, trunc, _ = envs.step(np.clip(a, -1, 1))
            done = term | trunc
            ep_ret += r * VALID[t]
            ep_len += VALID[t]
            for i in np.flatnonzero(done & VALID[t]):
                finished.append((total + (t + 1) * N, ep_ret[i], ep_len[i]))
                ep_ret[i], ep_len[i] = 0.0, 0
            disc_ret = disc_ret * gamma + r
            if VALID[t].any():
                ret_stat.update(disc_ret[VALID[t]])
            disc_ret[done] = 0.0
            R[t] = r / np.sqrt(ret_stat.var + 1e-8)
            TERM[t], DONE[t] = term, done
            V_next[t] = pol.value(obs)  # the next state's value (the final observation on a done step)
            prev_done = done
        pol.obs.update(O[VALID])
        total += T * N
        # GAE; an invalid (reset) step follows a done step, so no advantage crosses it
        adv = np.zeros((T, N))
        last = np.zeros(N)
        for t in range(T - 1, -1, -1):
            delta = R[t] + gamma * V_next[t] * ~TERM[t] - V[t]
            last = np.where(VALID[t], delta + gamma * lam * ~DONE[t] * last, 0.0)
            adv[t] = last
        ret_t = adv + V
        m = VALID.reshape(-1)
        bo, ba, blp = O.reshape(-1, n_obs)[m], A.reshape(-1, n_act)[m], LP.reshape(-1)[m]
        badv, bret = adv.reshape(-1)[m], ret_t.reshape(-1)[m]
        nb = bo.shape[0]
        for _ in range(epochs):
            perm = rng.permutation(nb)
            for s in range(0, nb, minibatch):
                idx = perm[s : s + minibatch]
                n = len(idx)
                x = pol.norm(bo[idx])
                ad = badv[idx]
                ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                mu = pol.pi.forward(x)
                lp = logp(ba[idx], mu, pol.log_std)
                ratio = np.exp(lp - blp[idx])
                active = np.where(ad >= 0, ratio <= 1 + clip, ratio >= 1 - clip)
                dlp = -(ad * ratio * active) / n  # d loss / d logp
                sig2 = np.exp(2 * pol.log_std)
                diff = ba[idx] - mu
                g_mu = dlp[:, None] * diff / sig2
                g_logstd = (dlp[:, None] * (diff**2 / sig2 - 1.0)).sum(0) - ent_coef
                g_pi = pol.pi.backward(g_mu)
                v = pol.vf.forward(x)[:, 0]
                g_vf = pol.vf.backward((vf_coef * (v - bret[idx]) / n)[:, None])
                grads = g_pi + g_vf + [g_logstd]
                gn = np.sqrt(sum((g**2).sum() for g in grads))
                if gn > max_grad_norm:
                    grads = [g * (max_grad_norm / gn) for g in grads]
                opt.step(grads)
        update += 1
        recent = [f[1] for f in finished[-20:]]
        hist["env_steps"].append(total)
        hist["wall_s"].append(time.perf_counter() - t0)
        hist["train_return"].append(float(np.mean(recent)) if recent else np.nan)
        if update % eval_every == 0:
            ev = evaluate(pol, eval_episodes, **env_kw)
            for k, val in zip(("eval_steps", "eval_return", "eval_std", "eval_len"), (total, *ev)):
                hist[k].append(val)
            log(
                f"update {update:4d}  env steps {total:8d}  {time.perf_counter() - t0:6.1f} s  "
                f"train return (last 20 episodes) {hist['train_return'][-1]:7.1f}  "
                f"eval {ev[0]:7.1f} +- {ev[1]:5.1f} (length {ev[2]:.0f})  std {np.exp(pol.log_std).round(2)}"
            )
    if hist["eval_steps"][-1] != total:
        ev = evaluate(pol, eval_episodes, **env_kw)
        for k, val in zip(("eval_steps", "eval_return", "eval_std", "eval_len"), (total, *ev)):
            hist[k].append(val)
    envs.close()
    return pol, {k: np.array(v) for k, v in hist.items()}, time.perf_counter() - t0


def plot(path, hist, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(hist["env_steps"], hist["train_return"], alpha=0.5, label="training episodes (stochastic, last 20)")
    ax.errorbar(
        hist["eval_steps"],
        hist["eval_return"],
        yerr=hist["eval_std"],
        fmt="o-",
        ms=3,
        label="deterministic policy, 8 episodes",
    )
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (Hopper-v5 reward)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="wall-time bound of training")
    ap.add_argument("--steps", type=int, default=10**8, help="environment-step bound")
    ap.add_argument("--num-envs", type=int, default=32)
    ap.add_argument("--n-steps", type=int, default=128, help="steps per env per update")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--minibatch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--eval-every", type=int, default=10, help="updates between evaluations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--integrator", default=None, help="the task's default (euler) when omitted")
    ap.add_argument("--plot", default=os.path.join(here, "docs", "img", "train_hopper_ppo.png"))
    ap.add_argument("--out", default=os.path.join(here, "docs", "controllers", "hopper_ppo.npz"))
    a = ap.parse_args(argv)
    env_kw = {"integrator": a.integrator} if a.integrator else {}
    pol, hist, wall = train(
        num_envs=a.num_envs,
        n_steps=a.n_steps,
        epochs=a.epochs,
        minibatch=a.minibatch,
        lr=a.lr,
        minutes=a.minutes,
        max_env_steps=a.steps,
        eval_every=a.eval_every,
        seed=a.seed,
        **env_kw,
    )
    e0, e1, best = hist["eval_return"][0], hist["eval_return"][-1], hist["eval_return"].max()
    msg = (
        f"PPO (numpy) on pbsim/Hopper-v0: {hist['env_steps'][-1] if len(hist['env_steps']) else 0} env steps in "
        f"{wall:.0f} s; deterministic return {e0:.1f} (initial) -> {e1:.1f} (final), best {best:.1f}; "
        f"final episode length {hist['eval_len'][-1]:.0f}"
    )
    print(msg)
    if a.plot:
        plot(a.plot, hist, msg.replace("; ", "\n", 1))
        print("wrote", a.plot)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        pol.save(a.out, **{f"history_{k}": v for k, v in hist.items()})
        print("wrote", a.out)
    return hist


if __name__ == "__main__":
    main()
