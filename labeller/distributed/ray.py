"""`labeller label --ray [ADDRESS]`: the pairs as a Ray Dataset in blocks, judged by workers into the shared store;
then this process writes the labels from the store, exactly as a single-process cached rerun does.

    driver                                   workers (Ray Data map_batches, one task per block)
    ------                                   -------
    check options, address, store            plan the block against the store: skip what is held
    start the coordinator (budget, rates)    judge the missing pairs: labelling.job.run_judge, the same
    pairs -> blocks -> Ray Dataset   ---->     judge classes, retries and engine, each attempt asking
                                     <----     the coordinator; verdicts stored as they settle
    final pass: labelling.job.run_judge over every pair, in input order, through the same coordinator

The store is the single source of truth: a worker killed mid-block loses only its requests in flight (Ray runs the
block again elsewhere; its leases are taken over at once on the same machine, after the lease's TTL on another);
the final pass answers every pair from the store, so the rows, their order and their bytes are those of a cached
rerun by construction, and a pair no worker could settle (a failure, a block lost for good) is tried there once
more under the same budget, or reported as failed exactly as a single-process run reports it.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path

from labeller.distributed.blocks import BlockJob, block_frames, judge_block, judge_identity
from labeller.distributed.checks import check_cluster_address, check_cluster_nodes, refuse_unsupported
from labeller.distributed.coordinator import TOTALS, ClusterJudge, Coordinator
from labeller.distributed.options import LOCAL
from labeller.errors import ConfigError, redact
from labeller.judges.base import Judge
from labeller.judges.registry import KEY_VARIABLES
from labeller.labelling.models import LabelOptions, LabelRun, LabelStats
from labeller.prices import PriceTable
from labeller.rubric import Rubric
from labeller.store import is_url

NAMESPACE = "labeller"


def ray_module():
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'labeller-relevance[ray]'", field="ray") from None
    return ray


class RayLabelling:
    """labelling.job.run_judge's stand-in for a run with options.ray: checks at once (nothing started), runs when
    called. `judge_args` are make_judge's arguments for the workers' own judges."""

    def __init__(self, options: LabelOptions, cache_spec, judge_spec: str, judge_args: dict) -> None:
        assert options.ray is not None
        refuse_unsupported(options)
        ray_module()
        # A directory store by its absolute path: a worker runs in a directory of its own
        self.ray_options = options.ray
        self.cache_spec = str(cache_spec) if is_url(str(cache_spec)) else str(Path(cache_spec).resolve())
        check_cluster_address(self.ray_options, is_url(self.cache_spec))
        self.judge_spec, self.judge_args = judge_spec, judge_args

    def __call__(self, pairs, queries, corpus, judge: Judge, rubric: Rubric, prices: PriceTable,
                 options: LabelOptions, cache_spec, sink=None, lines: bool = False) -> LabelRun:
        from labeller.labelling.job import run_judge

        ray = ray_module()
        started = time.monotonic()
        price = prices.lookup(judge.provider, judge.model)
        if options.max_cost is not None and price is None and len(pairs):
            raise ConfigError(f"--max-cost needs a price for {judge.name}; add the model to a --prices file")
        address = None if self.ray_options.address == LOCAL else self.ray_options.address
        ray.init(address=address, namespace=NAMESPACE, logging_level=logging.WARNING, log_to_driver=False,
                 include_dashboard=False if address is None else None)
        try:
            check_cluster_nodes({n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}, is_url(self.cache_spec))
            coordinator = self._coordinator(ray, judge, price, options)
            worker_options = options.model_copy(update=dict(ray=None, requests_per_minute=None, tokens_per_minute=None,
                                                            progress=False))
            blocks = self._judge_blocks(ray, pairs, queries, corpus, coordinator,
                                        BlockJob(judge_spec=self.judge_spec, rubric=rubric, prices=prices,
                                                 options=worker_options, cache_spec=self.cache_spec,
                                                 identity=judge_identity(judge), timeout=self.judge_args["timeout"],
                                                 temperature=self.judge_args["temperature"],
                                                 output_mode=self.judge_args["output_mode"]))
            final = run_judge(pairs, queries, corpus, ClusterJudge(judge, coordinator), rubric, prices,
                              options.model_copy(update=dict(ray=None, requests_per_minute=None,
                                                             tokens_per_minute=None)),
                              cache_spec, sink=sink, lines=lines)
            merge(final.stats, blocks, ray.get(coordinator.totals.remote()), started)
            final.stats.warnings.extend(stopped_blocks(blocks))
            return final
        finally:
            ray.shutdown()

    def _coordinator(self, ray, judge: Judge, price, options: LabelOptions):
        """The run's named coordinator, on this process's node: it lives and dies with the driver."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        actor = ray.remote(Coordinator).options(name=f"coordinator-{uuid.uuid4().hex[:12]}", num_cpus=0,
                                                max_concurrency=10_000, scheduling_strategy=here)
        base_url = self.judge_args.get("base_url") or os.environ.get(f"{judge.provider.upper()}_BASE_URL")
        credentials = dict(api_key=os.environ.get(KEY_VARIABLES.get(judge.provider, "-")), base_url=base_url)
        return actor.remote(price, options.max_cost, judge.max_output_tokens, options.requests_per_minute,
                            options.tokens_per_minute, credentials, self.judge_args["timeout"])

    def _judge_blocks(self, ray, pairs, queries, corpus, coordinator, job: BlockJob) -> list[dict]:
        """Every block through the workers, at most `workers` at once; one row of counts per block."""
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        frames = list(block_frames(pairs, queries, corpus, self.ray_options.block_size))
        if not frames:
            return []
        workers = self.ray_options.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        dataset = ray.data.from_pandas(frames).map_batches(
            judge_block, batch_size=None, batch_format="pandas", fn_kwargs=dict(job=job, coordinator=coordinator),
            compute=ray.data.TaskPoolStrategy(size=min(workers, len(frames))), num_cpus=1)
        try:
            return dataset.take_all()
        except ray.exceptions.RayError as exc:  # a block failed for good (not a dead node: Ray reruns those)
            cause = getattr(exc, "cause", None) or exc
            reason = str(cause).strip().splitlines()[-1] if str(cause).strip() else type(cause).__name__
            return [dict(pairs=0, new=0, cached=0, failed=0, skipped=0, budget_stopped=False,
                         stopped_by=f"the workers failed ({redact(reason[:300], _secrets())})")]


def _secrets() -> list[str]:
    return [value for name, value in os.environ.items() if name.endswith("_API_KEY")]


def stopped_blocks(blocks: list[dict]) -> list[str]:
    """What the workers could not do (the final pass has done it, or reported it as failed): said once."""
    stopped = [block for block in blocks if block["stopped_by"]]
    if not stopped:
        return []
    return [f"{len(stopped)} of {len(blocks)} blocks stopped on the workers ({stopped[0]['stopped_by']}); "
            "this process's final pass took up their pairs"]


def merge(stats: LabelStats, blocks: list[dict], totals: dict, started: float) -> None:
    """The run's stats: the final pass's outcome per pair (a stop or a budget a worker met, the final pass meets
    again), the workers' purchases, the coordinator's totals (every attempt sent anywhere in the cluster, once)."""
    bought = sum(block["new"] for block in blocks)
    stats.new += bought
    stats.cached -= bought  # the final pass found the workers' verdicts in the store
    for name in TOTALS:
        setattr(stats, name, round(totals[name], 6) if isinstance(totals[name], float) else totals[name])
    stats.elapsed_s = round(time.monotonic() - started, 3)
