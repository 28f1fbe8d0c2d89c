"""Record the authors' outputs that the suite's comparisons read (tests/reference_outputs.py), from their code:

    python tests/record_references.py remidi    # needs a snapshot of Michael-Beukman/ReMiDi (REMIDI_REPO)
    python tests/record_references.py kinetix_transformer    # needs kinetix-env (the README's Kinetix line)
    python tests/record_references.py xland_rulesets    # needs a snapshot of dunnolab/xland-minigrid (XLAND_MINIGRID_REPO)

Each recording names its source commit, the versions it ran under and this command in its JSON. The
`reference` tier (`python -m pytest -m reference`, CI's floor leg) runs the same code live and checks the
recording against it, so a recording that no longer matches the authors' code fails there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from reference_outputs import save  # noqa: E402


def versions() -> dict:
    import importlib.metadata as md  # noqa: PLC0415

    return {name: md.version(name) for name in ("jax", "jaxlib", "flax", "numpy")} | {"python": sys.version.split()[0]}


def record_remidi() -> None:
    import test_remidi as case  # noqa: PLC0415

    module = case._their_wrapper()
    if module is None:
        raise SystemExit(f"no snapshot of Michael-Beukman/ReMiDi at {case.REFERENCE}: set REMIDI_REPO")
    jax.tree_map = jax.tree.map  # their code's name for jax.tree.map
    runner, levels, rollout, earlier = case.make_case()
    env, params = runner.env, runner.env_params
    masks = {f"masks_{name}": case._their_masks(module, env, params, levels, rollout, earlier, considered)
             for name, considered in (("considered", case.CONSIDERED), ("skipping", case.SKIPPING))}
    commit = subprocess.run(["git", "-C", str(case.REFERENCE), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    save("remidi_masks", {"levels": levels, "earlier": earlier, "obs": rollout.obs,
                          "actions": np.asarray(rollout.actions), "reset": np.asarray(rollout.reset), **masks},
         {"source": f"Michael-Beukman/ReMiDi@{commit}", "code": "lib/wrappers/parallel_step.py: ParallelStepWrapper",
          "what": "should_train_on_mask per step and env, their wrapper run beside each env (tests/test_remidi.py)",
          "versions": versions(), "command": "python tests/record_references.py remidi"})


def record_gymnax() -> None:
    import importlib.metadata as md  # noqa: PLC0415

    import test_classic_reference as classic  # noqa: PLC0415 (needs gymnax: the `reference` extra)

    for name, outputs in (("cartpole", classic.cartpole_vs_gymnax(jax.random.key(0))),
                          ("pendulum", classic.pendulum_vs_gymnax(jax.random.key(1)))):
        save(f"gymnax_{name}", classic.record(name, outputs),
             {"source": f"gymnax=={md.version('gymnax')}", "code": f"gymnax.environments.classic_control.{name}: step_env",
              "what": "gymnax's step on 256 designed physics, states and actions (tests/test_classic_reference.py)",
              "versions": versions(), "command": "python tests/record_references.py gymnax"})


def record_kinetix_transformer() -> None:
    import importlib.metadata as md  # noqa: PLC0415

    import test_entity_transformer as case  # noqa: PLC0415 (needs kinetix-env: the `kinetix` extra)

    save("kinetix_transformer", case.record({size: case.observations(size)[0] for size in ("s", "m")}),
         {"source": f"kinetix-env=={md.version('kinetix-env')}",
          "code": "kinetix.models.transformer_model: ActorCriticTransformer (configs/model/model-base.yaml, "
                  "model-transformer.yaml), distributions by a stand-in for distrax (tests/test_entity_transformer.py)",
          "what": "parameter statistics per leaf (key 0), and logits and values on entity observations of sizes s "
                  "and m (hand-designed and random levels, at reset and after 12 random actions)",
          "versions": versions(), "command": "python tests/record_references.py kinetix_transformer"})


def record_xland_rulesets() -> None:
    import test_xland_rulesets as case  # noqa: PLC0415

    commits = case.their_commits()
    if commits is None:
        raise SystemExit(f"no git snapshot of dunnolab/xland-minigrid at {case.REFERENCE}: set XLAND_MINIGRID_REPO")
    arrays = {f"{version}_{kind}_{name}": value for (version, kind, count) in case.CASES
              for name, value in case.their_rulesets(version, kind, count).items()}
    save("xland_rulesets", arrays,
         {"source": {version: f"dunnolab/xland-minigrid@{commit}" for version, commit in commits.items()},
          "code": "scripts/ruleset_generator.py with scripts/generate_benchmarks.sh's arguments, seed 42",
          "what": "the rulesets their script writes, per (version, benchmark kind, count) of "
                  "tests/test_xland_rulesets.py: CASES", "versions": versions(),
          "command": "XLAND_MINIGRID_REPO=<git dir> python tests/record_references.py xland_rulesets"})


RECORDERS = {"gymnax": record_gymnax, "kinetix_transformer": record_kinetix_transformer, "remidi": record_remidi,
             "xland_rulesets": record_xland_rulesets}

if __name__ == "__main__":
    names = sys.argv[1:] or sorted(RECORDERS)
    unknown = [n for n in names if n not in RECORDERS]
    if unknown:
        raise SystemExit(f"unknown recording {unknown}; known: {', '.join(RECORDERS)}")
    for name in names:
        RECORDERS[name]()
        print(f"recorded {name}")
