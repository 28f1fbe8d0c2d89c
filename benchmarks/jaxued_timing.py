"""jaxued's `examples/maze_dr.py` in seconds per PPO update (steady state), for issue 48's side-by-side.

Run with jaxued's own environment (its example needs distrax, gymnax, wandb; not ours):
    /path/to/jaxued_venv/bin/python benchmarks/jaxued_timing.py --example /path/to/maze_dr.py --chunk 5 --reps 3 -- \
        --n_walls 60 --num_train_envs 32 --num_steps 256 --lr 1e-4 --gamma 0.995 --gae_lambda 0.98 \
        --entropy_coeff 1e-3 --epoch_ppo 5 --num_minibatches 1 --clip_eps 0.2 --max_grad_norm 0.5 --num_updates 30000
(jaxued at commit 0f8f128, installed from its source; `pip install jaxued` 0.0.1 predates its jax.tree fix.)

The example runs unmodified through its own argparse and main(); --eval_freq is forced
above --num_updates so main's training loop runs zero times (and no checkpoints are
written). While main() runs, jax.jit is wrapped to capture the functions it jits:
create_train_state, and train_and_eval_step, whose closure holds train_step. We then jit
lax.scan(train_step) over N updates (no eval), compile it, run once to warm up, and time
R further calls with block_until_ready.
"""
import argparse, os, runpy, sys, time

os.environ.setdefault("WANDB_MODE", "disabled")
import jax

p = argparse.ArgumentParser()
p.add_argument("--chunk", type=int, default=5, help="PPO updates per jitted call")
p.add_argument("--reps", type=int, default=2, help="timed calls after warm-up")
p.add_argument("--example", required=True, help="jaxued's examples/maze_dr.py, unmodified")
args, rest = p.parse_known_args()
rest = [a for a in rest if a != "--"]

# Large enough that num_updates // eval_freq == 0 whatever --num_updates is.
sys.argv = [args.example, *rest, "--eval_freq", str(10**12), "--checkpoint_save_interval", "0"]
captured, real_jit = {}, jax.jit

def recording_jit(fun=None, *a, **k):
    if fun is not None and hasattr(fun, "__name__"):
        captured[fun.__name__] = fun
    return real_jit(fun, *a, **k)

jax.jit = recording_jit
try:
    runpy.run_path(args.example, run_name="__main__")
finally:
    jax.jit = real_jit

tes = captured["train_and_eval_step"]
free = dict(zip(tes.__code__.co_freevars, (c.cell_contents for c in tes.__closure__)))
train_step, config = free["train_step"], free["config"]
create_train_state = jax.jit(captured["create_train_state"])

keys = ["num_updates", "num_train_envs", "num_steps", "epoch_ppo", "num_minibatches", "lr", "gamma",
        "gae_lambda", "entropy_coeff", "clip_eps", "max_grad_norm", "n_walls", "agent_view_size", "seed"]
print("config:", {k: config[k] for k in keys}, flush=True)
print(f"jax {jax.__version__} devices {jax.devices()} chunk {args.chunk} reps {args.reps}", flush=True)

rng_init, rng_train = jax.random.split(jax.random.PRNGKey(config["seed"]))  # as in main()
runner_state = jax.block_until_ready((rng_train, create_train_state(rng_init)))

@jax.jit
def run_chunk(runner_state):
    return jax.lax.scan(train_step, runner_state, None, args.chunk)

t0 = time.perf_counter()
compiled = run_chunk.lower(runner_state).compile()
print(f"compile: {time.perf_counter() - t0:.2f} s", flush=True)

t0 = time.perf_counter()
runner_state, metrics = jax.block_until_ready(compiled(runner_state))
dt = time.perf_counter() - t0
print(f"warm-up call: {dt:.3f} s  ({dt / args.chunk:.4f} s/update)", flush=True)

steps = args.chunk * config["num_train_envs"] * config["num_steps"]
for r in range(args.reps):
    t0 = time.perf_counter()
    runner_state, metrics = jax.block_until_ready(compiled(runner_state))
    dt = time.perf_counter() - t0
    print(f"rep {r}: {dt:.3f} s for {args.chunk} updates = {dt / args.chunk:.4f} s/update "
          f"({steps / dt:.0f} env steps/s), loss {float(metrics['losses'][0][-1]):.4f}", flush=True)
print("update_count:", int(runner_state[1].update_count))
