"""The rows of a file of `banyan bench --json` outputs written one after
another (bench.jsonl of galaxy-bench.sh and rebuild-bench.sh)."""
import json


def rows(path):
    text, out, at, dec = open(path).read(), [], 0, json.JSONDecoder()
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        r, at = dec.raw_decode(text, at)
        out.append(r)
    return out
