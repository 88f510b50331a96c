"""The baseline labeller is measured against: a bare asyncio loop over the openai SDK.

It sends the same rendered prompts (a JSONL of {"system", "user"} written by throughput.py) with
the same structured-output request, N workers in flight, parses each reply with json.loads, and
does nothing else: no cache, no retries, no output file. Run it as a whole process and time it
from start to exit:

    OPENAI_BASE_URL=http://127.0.0.1:8123/v1 OPENAI_API_KEY=unused \
        python benchmarks/bare_loop.py prompts.jsonl --concurrency 32 [--transport aiohttp]

--transport picks the SDK's HTTP transport: httpx (its default, what a bare loop gets) or aiohttp (its
DefaultAioHttpClient, the one labeller's judges use): the stricter reference for labeller's own overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import openai

SCHEMA = {
    "type": "object",
    "properties": {"justification": {"type": "string"}, "grade": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["justification", "grade"],
    "additionalProperties": False,
}


async def label_all(prompts: list[dict[str, str]], model: str, concurrency: int,
                    transport: str = "httpx") -> tuple[int, int]:
    http_client = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    client = openai.AsyncOpenAI(max_retries=0, http_client=http_client)
    response_format = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": SCHEMA}}
    todo = iter(prompts)
    done = failed = 0

    async def worker() -> None:
        nonlocal done, failed
        for prompt in todo:
            try:
                completion = await client.chat.completions.create(
                    model=model, temperature=0.0, max_completion_tokens=400, response_format=response_format,
                    messages=[{"role": "system", "content": prompt["system"]},
                              {"role": "user", "content": prompt["user"]}],
                )
                json.loads(completion.choices[0].message.content)["grade"]
                done += 1
            except Exception:
                failed += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.close()
    return done, failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("prompts")
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--transport", choices=("httpx", "aiohttp"), default="httpx")
    args = parser.parse_args()
    with open(args.prompts, encoding="utf-8") as f:
        prompts = [json.loads(line) for line in f]
    done, failed = asyncio.run(label_all(prompts, args.model, args.concurrency, args.transport))
    print(json.dumps({"done": done, "failed": failed}))


if __name__ == "__main__":
    main()
