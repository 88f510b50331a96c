"""The anticipated spread of the gold pairs' effects: NDCG under the pair design, first beside a certain stratum
(plan top:K), since stop 42 with random pairs alone too (below).

The stratified variance of the pair design (labeller.evaluation.corrected_estimate) takes each stratum's spread
s_j^2 from its gold pairs' effects z_i. NDCG's ideal DCG and recall's denominator hang on every pool pair of a
query, and beside a certain stratum (every given run's top K graded) what is left for the random pairs is a few
rare ones: relevant pairs outside every top K, which move a query's ideal DCG a lot. A random sample of about a
hundred of the rest's thousands holds none of them most of the time, and then its spread is far too small (on
LLMJudge the se of a run's NDCG@10 varied 40-fold over subsets, and its interval covered 54-68% of the time for
one run with ~90 random pairs, 82-96% per run with ~490 or ~1,290: benchmarks/README.md).

The spread a stratum would show is known in expectation without the sample: each pair's effect is z_i = a_i . r_i
(a_i the gradient of its query's value in its grade distribution, r_i its human grade minus its prediction p_i),
so under p_i its variance is a_i' (diag p_i - p_i p_i') a_i. Summed over the stratum's pool pairs and divided by
N_j - 1 it is the spread the stratum is expected to have (an anticipated variance, as survey sampling calls it);
the estimator takes the larger of it and the sample's. On LLMJudge it was the larger one most of the time at every
size measured (84-2,090 random pairs), and the se 1.1-3 times the estimate's spread: the predictions lean on the
top pairs, more often relevant than the rest, and the interval is conservative. For a pair off the run's top
positions a_i is its query's count gradient alone, so one query's pairs need only the sums of p_i and of p_i p_i'
over each stratum; the few pairs in a run's top positions add their own term.

Measured why it is conservative (LLMJudge, top 10 + random pairs, 60-150 subsets; benchmarks/README.md): the
anticipated spread is 1.25-1.5 times the strata's spread under people's actual grades (an oracle only the benchmark
knows; Olz-gpt4o, ~90 and ~490 random pairs): the rest pairs' predictions lean on the certain pairs of their
(query, judge grade). Tilting them towards the random gold (per judge grade or per query) narrowed it by 0-10%;
predicting the rest from the random gold's all-query calibration widened it 1.5 times; a pooled spread
((n_j - 1) s_j^2 + k A_j) / (n_j - 1 + k) narrowed it 15-25% but covered 87-90% for BM25 runs at ~490 and ~1,290
random pairs (the sample misses the rare pairs at every size). So the anticipated spread stays, and beside it is
PPI++'s fallback (`narrower`): the same estimator from the same gold without the judge (`corrected_power.blind_pool`), reported
where its interval is the narrower and the two estimates agree.

With random pairs alone (no certain stratum; stop 42) the same floor holds for NDCG: its ideal DCG hangs on a
query's few top-grade pairs, a poor run's DCG on the rare relevant pair in its top k, and a few hundred random pairs
hold few of either. There each pair's gradient is its effect on DCG over the expected ideal DCG at the model point
(labeller.evaluation.corrected._expected_ndcg: the ideal DCG's through one pair more of each grade, for every pool
pair; the DCG's for the run's top k), and both arms of the power tuning take the floor (`corrected_power.tuned`
says which spread decided the blend). On TREC DL19 with simulated judges the estimate had spread up to 1.4-1.5 times
its se for a poor run, and nDCG@10 pooled coverage rose 0 to 3.9 points for 2-5% width, no run lower on the six
runs (benchmarks/README.md, "Stop 42").
"""

from __future__ import annotations


import numpy as np

from labeller.evaluation.corrected_pool import GoldPool


AGREE = 1.0  # the fallback needs the two estimates within this many of the human-only se of each other
# further apart than this many human-only se, the reported interval is the hull of both (TREC DL19, a rank-independent
# simulated judge: the judge's NDCG@10 ran -1.5 to -2.6 of its se off while the human-only one covered, 1-1.6 human-only
# se apart, so at 2 the hull changed nothing: benchmarks/README.md; since corrected_tilt.top_tilt it is -0.6 to +0.3)
DISAGREE = AGREE


def narrower(value, alone):
    """`value` (the judge's) or, when its judge-error interval is the wider and the two estimates agree (within AGREE
    human-only se), `alone` (the human-only one) marked so: PPI++ picks the weight on the judge that gives the smaller
    variance, 0 among them. The agreement is a guard against the human-only estimate's own bias: it predicts a
    query's other pairs from its gold, mostly the certain top pairs, and where those are far more often relevant
    than the rest its first-order correction cannot reach (a simulation, tests/test_evaluation_corrected_top_ndcg.py:
    taking the narrower interval alone covered 20% for one run; with the guard at 1 se 97.5%, at 1.5 se 87.5%, while
    the predictions learned from all the gold; from the random gold only (corrected_tilt.learning_gold) 97.5% alone,
    with NDCG's tilted by each query's gold (corrected_tilt.top_tilt) 95%).
    Further apart than DISAGREE human-only se, one of them is biased and which is not known (on TREC DL19 with a
    rank-independent judge it was the judge's): `value` with the hull of both intervals, marked "both"."""
    if None in (alone.se_judge, value.se_judge, alone.ci_low, value.ci_low, alone.estimate, value.estimate):
        return value
    apart = abs(alone.estimate - value.estimate)
    if alone.ci_high - alone.ci_low < value.ci_high - value.ci_low and apart <= AGREE * alone.se_judge:
        return alone.model_copy(update={"spread": "human only", "power_lambda": 0.0})
    if apart > DISAGREE * alone.se_judge:  # one of them is biased, which is not known: the interval holds both
        ends = ("ci_low", "ci_high", "ci_low_queries", "ci_high_queries")
        both = {e: (min if e.startswith("ci_low") else max)(getattr(value, e), getattr(alone, e)) for e in ends
                if getattr(value, e) is not None and getattr(alone, e) is not None}
        return value.model_copy(update={**both, "spread": "both", "power_lambda": 1.0})
    return value.model_copy(update={"power_lambda": 1.0})


class Anticipated:
    """Per (query, random stratum) sums of the rest pairs' predicted grade distributions p and of p p'."""

    def __init__(self, pool: GoldPool, expected: np.ndarray):
        self.pool, self.expected = pool, expected
        rest = ~pool.certain if len(pool.certain) else np.ones(len(pool.judge), dtype=bool)
        self.keys: dict[tuple[str, int], int] = {}
        rows = np.flatnonzero(rest)
        group = np.array([self.keys.setdefault((pool.query[i], int(pool.judge[i])), len(self.keys)) for i in rows],
                         dtype=np.int64)
        width = expected.shape[1]
        self.first = np.zeros((len(self.keys), width))
        self.second = np.zeros((len(self.keys), width, width))
        if len(rows):
            p = expected[rows]
            np.add.at(self.first, group, p)
            np.add.at(self.second, group, p[:, :, None] * p[:, None, :])

    def total(self, gradient: dict[str, np.ndarray], positioned: dict[int, np.ndarray], j: int) -> float:
        """Sum over stratum j's pool pairs of the variance of z_i under p_i; `gradient`: query -> d value / d
        count of each grade; `positioned`: pair -> the extra gradient of a
        pair in the run's top positions."""
        out = scale = 0.0  # scale: E[a^2] summed, what the variances are differences of (rounding below it is 0)
        for q, g in gradient.items():
            at = self.keys.get((q, j))
            if at is not None:
                square = float(self.first[at] @ (g * g))
                out, scale = out + square - float(g @ self.second[at] @ g), scale + square
        pool = self.pool
        for i, extra in positioned.items():
            if int(pool.judge[i]) != j or (len(pool.certain) and pool.certain[i]):
                continue
            p, g = self.expected[i], gradient.get(pool.query[i], np.zeros(len(extra)))
            a = g + extra
            out += float(p @ (a * a) - (p @ a) ** 2) - float(p @ (g * g) - (p @ g) ** 2)
            scale += float(p @ (a * a))
        return out if out > 1e-12 * scale else 0.0



class Larger:
    """The larger of several anticipated spreads of the same pool (labeller.evaluation.corrected._anticipated)."""

    def __init__(self, *spreads: Anticipated):
        self.spreads = spreads

    def total(self, gradient: dict[str, np.ndarray], positioned: dict[int, np.ndarray], j: int) -> float:
        return max(s.total(gradient, positioned, j) for s in self.spreads)
