"""answers_job: `labeller answers judge` from files to reports. Every input is read and checked before anything is
sent; the reports (answers.md, answers.html, answers.json in --report DIR) are written only once all is judged,
and never over an input."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from labeller.answers.inputs import (answers_from, file_rows, passages_from_contexts, read_expectations,
                                     read_run_passages)
from labeller.answers.models import AnswerInputs, AnswerOptions, AnswerReport
from labeller.answers.report import markdown
from labeller.answers.report_html import html_page
from labeller.answers.run import judge_answers
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.memory import Input
from labeller.io.outputs import check_outputs, existing_files
from labeller.io.writing import write_text

REPORT_FILES = ("answers.md", "answers.html", "answers.json")


class AnswerFiles(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    queries: Input
    answers: Input
    corpus: Input | None = None  # needed with a run
    run: Input | None = None
    depth: int = 5  # the top K of the run shown to the claim judge (and checked for required evidence)
    contexts: Input | None = None
    required: Input | None = None
    facts: Input | None = None
    outcomes: Input | None = None

    def all(self) -> list[Input | None]:
        return [self.queries, self.answers, self.corpus, self.run, self.contexts, self.required, self.facts,
                self.outcomes]


def read_inputs(files: AnswerFiles) -> AnswerInputs:
    if (files.run is None) == (files.contexts is None):
        raise BadInputError("give exactly one of --run (with --corpus) or --contexts: the passages each answer is "
                            "judged against")
    if files.depth < 1:
        raise BadInputError(f"--depth {files.depth}: expected at least 1", field="depth")
    questions = {qid: q.text for qid, q in read_queries(files.queries).items()}
    if files.run is not None:
        if files.corpus is None:
            raise BadInputError("--run needs --corpus: the passages' texts come from it")
        corpus = read_corpus(files.corpus)
        passages = read_run_passages(files.run, questions, corpus, files.depth)
    else:
        passages = passages_from_contexts(*file_rows(files.contexts), questions)  # type: ignore[misc]
    return AnswerInputs(questions=questions, answers=answers_from(*file_rows(files.answers), questions),
                        passages=passages, **read_expectations(questions, required=files.required, facts=files.facts,
                                                               outcomes=files.outcomes))


def answers_job(files: AnswerFiles, options: AnswerOptions,
                report_dir: Path | None = None) -> tuple[AnswerReport, list[Path]]:
    outputs = {f"--report {name}": (report_dir / name if report_dir else None) for name in REPORT_FILES}
    check_outputs(inputs=existing_files(files.all() + [Path(options.claim_rubric) if options.claim_rubric else None]),
                  files=outputs)
    report = judge_answers(read_inputs(files), options)
    written: list[Path] = []
    if report_dir is not None and not options.labelling.dry_run:
        report_dir.mkdir(parents=True, exist_ok=True)
        for name, text in zip(REPORT_FILES, (markdown(report), html_page(report), report.model_dump_json(indent=2))):
            written.append(write_text(report_dir / name, text))
    return report, written
