"""The training loop, one environment step at a time.

`Trainer.step()` does exactly one environment step, and a learner update when one is due:

    W_t = window of the episode so far       (the same code that builds replay windows)
    a_t = epsilon-greedy(Q(W_t))             epsilon annealed linearly over env steps
    o_{t+1}, r_t, terminated_t, truncated_t = env.step(a_t)
    store (o_t, a_t, r_t, o_{t+1}, terminated_t, truncated_t)
    every `train_every` steps after `learning_starts`:
        batch ~ replay(B, beta)              beta annealed from beta0 to beta_end over the updates
        delta = agent.learn(batch)           IS weights inside the per-sample loss
        replay.update_priorities(batch, |delta|)

With ``replay.mode = "sequences"`` (R2D2, `rdqn.replay.SequenceReplay`) the recurrent network
instead reads o_t from the LSTM state h_t it carries through the episode (zeros at its start),
a_t = epsilon-greedy(Q(o_t; h_t)), and h_t is stored with o_t where a sequence begins; a batch
is of sequences, learned after a burn-in from their stored (or zero) states
(`DQNAgent.learn_sequences`), each given the eta-mixed priority of its steps' |delta_t|.

Environment steps, learner updates and episodes are counted separately. A diverging update (NaN
or inf) raises `DivergenceError` with everything recorded so far kept (status "failed"; the
trainer steps no further and is not `done`: only a spent budget or a reached goal is). With
``train.stop_at_return`` set, the trainer is `done` ("finished") at the end of the first episode
after which the mean return of the last `RETURN_WINDOW` episodes is at least that goal, whatever
is left of the budget (beta, annealed over the budget's updates, then stops short of its end). Runs
drive a trainer through `rdqn.runs.lifecycle.RecordedRun` (to the end with `run_to_end`, or step
by step with `rdqn.runs.control.drive`); the trainer's own status only describes its loop.

Resuming: `checkpoint_state(resumable=True)` holds everything the loop depends on, and `restore`
makes a fresh trainer of the same config go on from it exactly, at any step
(`rdqn.training.checkpointing`). The schedules (epsilon over env steps, beta over updates) are
functions of the counters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, Protocol

import numpy as np

from rdqn.config import RETURN_WINDOW, RunConfig
from rdqn.envs import make_env
from rdqn.learn.agent import DivergenceError, DQNAgent
from rdqn.learn.nets import STATE_SIZE
from rdqn.replay import LinearSchedule, SequenceReplay, SumTree, WindowBuilder
from rdqn.training import checkpointing
from rdqn.training.episodes import PlayedEpisode
from rdqn.training.evaluation import Evaluations, evaluation_seeds
from rdqn.training.greedy import carrying_q_values, play_greedy
from rdqn.training.resume_checks import CheckedResume, check_resume
from rdqn.training.sampler_check import GoodnessOfFit, check_sampler
from rdqn.training.state import RESUME_KEY, ResumeStateError, env_rng
from rdqn.training.telemetry import (
    Telemetry,
    TelemetryRecorder,
    relative_probability_histogram,
)
from rdqn.training.timings import ACT, ENV, EVALUATION, INIT, Timings
from rdqn.training.updates import build_replay, build_sampler, update

__all__ = [
    "RESUME_KEY",
    "CheckedResume",
    "MetricsSink",
    "ResumeStateError",
    "Trainer",
    "build_sampler",
]

FIT_BINS = 16
FIT_BATCHES = 16
TREE_LEVELS = 5


class MetricsSink(Protocol):
    """Where a trainer streams its rows (a `rdqn.runs.writer.RunWriter`, or a list in tests)."""

    def add_episode(self, **row: Any) -> None: ...

    def add_step(self, **row: Any) -> None: ...

    def add_evaluation(self, **row: Any) -> None: ...


def _make_env(config: RunConfig) -> Any:
    """The run's env; `ValueError` naming env.kwargs (and the prices CSV) when it is refused."""
    return make_env(config.env.id, **config.env.kwargs)


class Trainer:
    """Drives env + agent + replay one step at a time; see the module docstring."""

    def __init__(
        self,
        config: RunConfig,
        *,
        sink: MetricsSink | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.config = config
        self.sink = sink
        self.timings = Timings()
        self._clock = clock
        with self.timings.measure(INIT):
            seeds = np.random.SeedSequence(config.seed).generate_state(4)
            self.env = _make_env(config)
            space = self.env.observation_space
            self.obs_shape: tuple[int, ...] = tuple(space.shape)
            self.n_actions = int(self.env.action_space.n)
            obs_dim = int(np.prod(self.obs_shape))
            self.agent = DQNAgent(obs_dim, self.n_actions, config.agent, seed=int(seeds[0]))
            # Frames of flags or bytes (MinAtar's) are stored as they come: 4-32x smaller.
            obs_dtype = space.dtype if space.dtype.kind in "bu" else np.float32
            self.sequences = config.replay.mode == "sequences"
            self.buffer = build_replay(config, self.obs_shape, obs_dtype, int(seeds[1]))
            self._carried = np.zeros(STATE_SIZE, np.float32)
            """The LSTM state acting carries through the episode (sequences mode)."""
            self._diagnostic_rng = np.random.default_rng(int(seeds[2]))
            self.windows = WindowBuilder(config.replay.window, self.obs_shape, obs_dtype)
            train = config.train
            self.epsilon_schedule = LinearSchedule(
                train.epsilon_start,
                train.epsilon_end,
                int(train.epsilon_fraction * train.total_steps),
            )
            # Update u (0-based) of U samples with beta(u): beta0 at u = 0, beta_end at u = U - 1.
            self.beta_schedule = LinearSchedule(
                config.replay.beta0, config.replay.beta_end, max(0, train.planned_updates - 1)
            )
            self.recorder = TelemetryRecorder(planned_updates=train.planned_updates)
            self.evaluations = Evaluations.none(train.eval_episodes)
            self._obs, _ = self.env.reset(seed=config.seed)
            self.env.action_space.seed(int(seeds[3]))
            self.windows.reset(self._obs)
        # The env generator's state just before the reset that began this episode (None: the
        # seeded first reset), so that a run resumed at an episode boundary replays that reset.
        self._episode_start_rng: dict[str, Any] | None = None
        self.env_steps = 0
        self.updates = 0
        self.episodes = 0
        self.status = "created"
        self.error: str | None = None
        self._episode_return = 0.0
        self._episode_length = 0
        self._goal_reached = False
        self._started = clock()
        self._steps_per_second = 0.0

    # ------------------------------------------------------------------ loop
    @property
    def done(self) -> bool:
        """Whether the budget of env steps is spent or the goal (``train.stop_at_return``)
        reached (a failed trainer is not done: it stopped short of both, and steps no further)."""
        return self._goal_reached or self.env_steps >= self.config.train.total_steps

    @property
    def goal_reached(self) -> bool:
        """Whether the mean return of the last `RETURN_WINDOW` episodes has reached
        ``train.stop_at_return`` (always False without a goal)."""
        return self._goal_reached

    def _reaches_goal(self) -> bool:
        goal = self.config.train.stop_at_return
        recent = self.recorder.episode_returns[-RETURN_WINDOW:]
        return goal is not None and len(recent) == RETURN_WINDOW and bool(np.mean(recent) >= goal)

    @property
    def epsilon(self) -> float:
        return self.epsilon_schedule(self.env_steps)

    @property
    def beta(self) -> float:
        return self.beta_schedule(self.updates)

    def step(self) -> None:
        """One environment step, plus one learner update when due."""
        if self.done or self.status == "failed":
            raise RuntimeError(
                f"the run is over ({self.status}, {self.env_steps} of "
                f"{self.config.train.total_steps} steps)"
            )
        self.status = "running"
        timings = self.timings
        with timings.measure(ACT):
            if self.sequences:
                before = self._carried
                action, self._carried = self.agent.act_carrying(self._obs, before, self.epsilon)
            else:
                window, mask = self.windows.window_and_mask()
                action = self.agent.act(window, self.epsilon, mask)
        with timings.measure(ENV):
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
        if self.sequences:
            # h_t, read only where o_t begins a sequence (and without a stored state, never).
            self.buffer.add(
                self._obs, action, float(reward), next_obs, terminated, truncated, state=before
            )
        else:
            self.buffer.add(self._obs, action, float(reward), next_obs, terminated, truncated)
        self.env_steps += 1
        self._episode_return += float(reward)
        self._episode_length += 1
        if terminated or truncated:
            self._end_episode()
        else:
            self._obs = next_obs
            self.windows.append(next_obs)
        train = self.config.train
        if self.env_steps > train.learning_starts and self.env_steps % train.train_every == 0:
            self._learn()
        if train.eval_every and self.env_steps % train.eval_every == 0:
            self.evaluate()
        if self.done and self.status == "running":
            self.status = "finished"

    def run(
        self,
        steps: int | None = None,
        progress: Callable[[Trainer], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Trainer:
        """Step until `steps` more env steps are done (default: the whole budget) or the trainer
        is `done`, calling ``progress`` every 100 steps; ``stop``, asked before every step, ends
        the loop early."""
        target = self.config.train.total_steps
        if steps is not None:
            target = min(target, self.env_steps + steps)
        while self.env_steps < target and not self._goal_reached:
            if stop is not None and stop():
                break
            self.step()
            if progress is not None and self.env_steps % 100 == 0:
                progress(self)
        return self

    def _end_episode(self) -> None:
        self.episodes += 1
        self.recorder.on_episode(self._episode_return, self.env_steps, self._episode_length)
        self._goal_reached = self._reaches_goal()
        if self.sink is not None:
            self.sink.add_episode(
                episode=self.episodes,
                env_steps=self.env_steps,
                updates=self.updates,
                **{"return": self._episode_return},
                length=self._episode_length,
                wall_time=self._clock() - self._started,
            )
        self._episode_return = 0.0
        self._episode_length = 0
        with self.timings.measure(ENV):
            self._episode_start_rng = env_rng(self.env).bit_generator.state
            self._obs, _ = self.env.reset()
        self.windows.reset(self._obs)
        self._carried = np.zeros(STATE_SIZE, np.float32)

    def _learn(self) -> None:
        beta = self.beta
        try:
            done = update(self.buffer, self.agent, self.config, beta, self.timings)
        except DivergenceError as err:
            self.status = "failed"
            self.error = str(err)
            raise
        batch, result, td_abs = done.batch, done.result, done.td_abs
        self.updates += 1
        train = self.config.train
        log = self.updates % train.log_every == 0
        view = self.recorder.on_update(
            update=self.updates,
            indices=batch.indices,
            generations=batch.generations,
            probabilities=batch.probabilities,
            weights=batch.weights,
            td_abs=td_abs,
            ages=self.buffer.ages(batch.indices),
            buffer_size=self.buffer.storage.size,  # ages count writes: of steps, for sequences
            loss=result.loss,
            q_mean=result.q_mean,
            log=log,
        )
        if log and self.sink is not None:
            self.sink.add_step(
                updates=self.updates,
                env_steps=self.env_steps,
                loss=result.loss,
                td_abs_mean=done.td_abs_mean,
                q_mean=result.q_mean,
                beta=beta,
                epsilon=self.epsilon,
                ess=view.ess,
                wall_time=self._clock() - self._started,
            )
        if self.updates % train.histogram_every == 0:
            self.recorder.on_histograms(self.updates, self._probabilities())

    def _probabilities(self) -> np.ndarray:
        """P(i) of every item the sampler holds: stored transitions, or live sequences."""
        if isinstance(self.buffer, SequenceReplay):
            return self.buffer.probabilities()[self.buffer.index.live_slots()]
        return self.buffer.probabilities()

    # ------------------------------------------------------------- reporting
    def goodness_of_fit(self, batches: int = FIT_BATCHES, bins: int = FIT_BINS) -> GoodnessOfFit:
        """Draw `batches` diagnostic batches and test them against P(i), with the null law of
        the sampler's own draws (stratified or independent; `rdqn.training.sampler_check`).

        Uses its own generator: samplers only read their state when sampling, so this never
        changes what training draws next.
        """
        size = len(self.buffer)
        if isinstance(self.buffer, SequenceReplay):  # every sequence slot in use, live or not
            size = self.buffer.index.used
        return check_sampler(
            self.buffer.sampler,
            size,
            min(self.config.replay.batch_size, len(self.buffer)),
            batches=batches,
            bins=bins,
            rng=self._diagnostic_rng,
        )

    def _tree_levels(self) -> list[np.ndarray]:
        sampler = self.buffer.sampler
        tree = getattr(sampler, "tree", None)
        return tree.levels(TREE_LEVELS) if isinstance(tree, SumTree) else []

    def snapshot(self, *, with_internals: bool = True) -> Telemetry:
        """An immutable `Telemetry` of the run so far (cheap enough to call about once a second)."""
        self._steps_per_second = self.recorder.mark_rate(self.env_steps)
        size = len(self.buffer)
        index = self.buffer.index if isinstance(self.buffer, SequenceReplay) else None
        priorities = fit = None
        if with_internals and size:
            priorities = relative_probability_histogram(self._probabilities(), size)
            if self.updates:
                fit = self.goodness_of_fit()
        return self.recorder.snapshot(
            status=self.status,
            error=self.error,
            env_steps=self.env_steps,
            updates=self.updates,
            episodes=self.episodes,
            total_steps=self.config.train.total_steps,
            beta=self.beta,
            epsilon=self.epsilon,
            steps_per_second=self._steps_per_second,
            scheme=self.buffer.sampler.name,
            buffer_size=self.buffer.storage.size,
            capacity=self.buffer.capacity,
            items=size,
            item="sequence" if self.sequences else "transition",
            slots=index.capacity if index is not None else self.buffer.capacity,
            slots_used=index.used if index is not None else self.buffer.storage.size,
            stale_updates=self.buffer.stale_updates,
            priorities=priorities,
            fit=fit,
            tree_levels=self._tree_levels() if with_internals else [],
            timings=self.timings.totals(),
            evaluations=self.evaluations,
        )

    def evaluate(self) -> Evaluations:
        """Evaluate the policy now (`rdqn.training.evaluation`: ``train.eval_episodes`` greedy
        episodes on the held-out seeds), keep it in `evaluations` and stream its rows; training
        is untouched. Returns the evaluations so far."""
        seeds = evaluation_seeds(self.config.train.eval_episodes)
        played = [self.greedy_episode(seed) for seed in seeds]
        self.evaluations = self.evaluations.add(self.env_steps, played)
        if self.sink is not None:
            for k, (seed, episode) in enumerate(zip(seeds, played, strict=True)):
                self.sink.add_evaluation(
                    env_steps=self.env_steps,
                    episode=k,
                    seed=seed,
                    **{"return": episode.episode_return},
                    length=episode.length,
                )
        return self.evaluations

    def greedy_episode(self, seed: int) -> PlayedEpisode:
        """One episode of the current policy, a = argmax_a Q(W_t, a), on an env of its own reset
        with ``seed`` (`rdqn.training.greedy`); timed as evaluation, and nothing else touched."""
        config = self.config
        q_values, window = self.agent.q_values, config.replay.window
        if self.sequences:  # the LSTM state carried through the episode, from zeros
            q_values, window = carrying_q_values(self.agent.q_values_carrying, STATE_SIZE), 1
        with self.timings.measure(EVALUATION):
            return play_greedy(
                q_values,
                config.env.id,
                dict(config.env.kwargs),
                window,
                seed=seed,
                env_steps=self.env_steps,
            )

    @property
    def between_steps(self) -> bool:
        """Whether the trainer stands between two steps rather than cut off inside one (by
        Ctrl-C, say): one stored transition per env step, one agent update per counted update."""
        return self.buffer.storage.writes == self.env_steps and self.agent.updates == self.updates

    def checkpoint_state(self, *, resumable: bool = False) -> dict[str, Any]:
        """Agent weights, optimizer, counters and config, loadable with weights_only=True; with
        ``resumable`` also, under `RESUME_KEY`, the rest of what `restore` needs
        (`rdqn.training.checkpointing.save`). Refused (``RuntimeError``) unless
        `between_steps`."""
        return checkpointing.save(self, resumable=resumable)

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state`` (`checkpoint_state(resumable=True)` of a trainer of this
        config) where it stopped (`rdqn.training.checkpointing.restore`). Only a trainer that has
        not stepped yet restores (``RuntimeError``); the whole state is checked before anything
        changes (`check_resume`), and ``ValueError`` names what is wrong."""
        checkpointing.restore(self, state)

    def check_resume(self, state: Mapping[str, Any]) -> CheckedResume:
        """Check a resume state before `restore` uses any of it, changing nothing
        (`rdqn.training.resume_checks.check_resume`); ``ValueError`` names what is wrong."""
        return check_resume(self, state)

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        cfg = asdict(self.config.replay)
        return (
            f"Trainer(env={self.config.env.id!r}, scheme={cfg['scheme']!r}, "
            f"steps={self.env_steps}/{self.config.train.total_steps}, status={self.status!r})"
        )
