"""`labeller agree --json` reproduces the agreement figures published for the LLMJudge challenge.

Reads ../shared/data/llmjudge beside the checkout (never copied into the repository) and skips when absent.
Published: Rahmani et al., "Judging the Judges" (arXiv 2502.13908), per submission Cohen's kappa on the
4-point scale, Krippendorff's alpha (ordinal) and kappa binarized at 0|123, 01|23, 012|3 (relevant from
2, 3, 4 after mapping 0-3 onto 1-4).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement_helpers import agree_json

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "llmjudge"
pytestmark = pytest.mark.skipif(not (DATA / "published_agreement.tsv").is_file(),
                                reason="../shared/data/llmjudge is not beside the checkout")
COLUMNS = {"kappa_4pt": ("kappa",), "kripp_alpha": ("alpha_ordinal",), "kappa_0|123": ("kappa_binary", "2"),
           "kappa_01|23": ("kappa_binary", "3"), "kappa_012|3": ("kappa_binary", "4")}


def published() -> dict[str, dict[str, float]]:
    lines = [line.split("\t") for line in (DATA / "published_agreement.tsv").read_text().splitlines() if line.strip()]
    return {row[0]: dict(zip(lines[0][1:], map(float, row[1:]))) for row in lines if row[0] != lines[0][0]}


@pytest.mark.parametrize("run", ["Olz-gpt4o", "h2oloo-fewself", "willia-umbrela1"])
def test_published_kappa_and_alpha_reproduced_to_three_decimals(run):
    paper = published()[run]
    result = agree_json("--labels", DATA / f"llm_{run}.txt", "--gold", DATA / "human_qrels.txt",
                        "--from-scale", "0-3", "--bootstrap", 20)
    assert result["n"] == 4423 and result["one_side_only"]["labels_only"] == 0 == result["one_side_only"]["gold_only"]
    for column, path in COLUMNS.items():
        value = result
        for key in path:
            value = value[key]
        assert value == pytest.approx(paper[column], abs=5e-4), column
    assert result["kappa_binary"]["5"] is None  # nothing is grade 5 on a 0-3 scale mapped onto 1-4
