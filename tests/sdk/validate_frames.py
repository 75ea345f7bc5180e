"""Validate the frames voxdesk's realtime clients send against the providers' official SDK types.

Input: JSON Lines, each {"provider": "gemini" | "openai", "frame": <the frame as sent>}.
Gemini frames are validated with google-genai's LiveClientMessage (extra='forbid'), its
setup.realtimeInputConfig apart against RealtimeInputConfig (LiveClientSetup lacks it). OpenAI
events are dispatched on "type" to openai.types.realtime's client event class and validated
strictly; unknown keys (which openai's models silently keep) are reported by walking the tree.
"openai-chat" records are Chat Completions request bodies (the text providers'), validated with
openai.types.chat's CompletionCreateParamsStreaming / NonStreaming through pydantic's TypeAdapter,
every lazy iterator forced and the result compared with the body, so an unknown key (which a
TypedDict drops silently) or a coerced value fails too.
"anthropic" records are Messages request bodies, validated the same way with anthropic's
MessageCreateParamsStreaming / NonStreaming; "gemini-text" records are generateContent bodies,
each part validated with google-genai's models (Content for every contents[i] and
systemInstruction, Tool, ToolConfig, GenerationConfig: extra='forbid'), no other top-level key.
Exit 1 on any invalid frame, naming it.

Usage: python3 validate_frames.py FRAMES.jsonl
"""

import json
import sys
from typing import get_args

from google.genai import types as gt
from openai.types import realtime as ort
from pydantic import BaseModel


def openai_classes():
    union = get_args(ort.RealtimeClientEvent)[0]
    out = {}
    for cls in get_args(union):
        for lit in get_args(cls.model_fields["type"].annotation):
            out[lit] = cls
    return out


def unknown_fields(m, where="$"):
    found = []
    if isinstance(m, BaseModel):
        for k in (m.model_extra or {}):
            found.append(f"{where}.{k}")
        for name in type(m).model_fields:
            found += unknown_fields(getattr(m, name), f"{where}.{name}")
    elif isinstance(m, (list, tuple)):
        for i, v in enumerate(m):
            found += unknown_fields(v, f"{where}[{i}]")
    elif isinstance(m, dict):
        for k, v in m.items():
            found += unknown_fields(v, f"{where}.{k}")
    return found


def check_gemini(frame):
    frame = json.loads(json.dumps(frame))
    setup = frame.get("setup")
    if isinstance(setup, dict) and "realtimeInputConfig" in setup:
        gt.RealtimeInputConfig.model_validate(setup.pop("realtimeInputConfig"))
    if len(frame) != 1:
        raise ValueError(f"one top-level key per frame, got {sorted(frame)}")
    gt.LiveClientMessage.model_validate(frame)


def check_openai(frame, classes):
    cls = classes.get(frame.get("type"))
    if cls is None:
        raise ValueError(f"no client event of type {frame.get('type')!r}")
    m = cls.model_validate(frame, strict=True)
    extra = unknown_fields(m)
    if extra:
        raise ValueError(f"unknown fields: {extra}")


def chat_adapters():
    from openai.types.chat import completion_create_params as ccp
    from pydantic import TypeAdapter

    return (
        TypeAdapter(ccp.CompletionCreateParamsStreaming),
        TypeAdapter(ccp.CompletionCreateParamsNonStreaming),
    )


def force(x):
    """Materialise pydantic's lazy iterators so nested errors raise."""
    if isinstance(x, dict):
        return {k: force(v) for k, v in x.items()}
    if isinstance(x, (str, bytes, int, float, bool)) or x is None:
        return x
    return [force(v) for v in x]


def anthropic_adapters():
    from anthropic.types import message_create_params as mcp
    from pydantic import TypeAdapter

    return (
        TypeAdapter(mcp.MessageCreateParamsStreaming),
        TypeAdapter(mcp.MessageCreateParamsNonStreaming),
    )


def check_gemini_text(body):
    parts = {
        "systemInstruction": gt.Content,
        "toolConfig": gt.ToolConfig,
        "generationConfig": gt.GenerationConfig,
    }
    for k, v in body.items():
        if k == "contents":
            for c in v:
                gt.Content.model_validate(c)
        elif k == "tools":
            for t in v:
                gt.Tool.model_validate(t)
        elif k in parts:
            parts[k].model_validate(v)
        else:
            raise ValueError(f"unknown top-level key {k!r}")


def check_openai_chat(body, adapters):
    streaming, whole = adapters
    adapter = streaming if body.get("stream") is True else whole
    out = force(adapter.validate_python(body, strict=True))
    if out != body:
        raise ValueError(f"an unknown key was dropped or a value coerced: {out} != {body}")


def main(path):
    classes = openai_classes()
    adapters = chat_adapters()
    claude = anthropic_adapters()
    bad = 0
    n = 0
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            n += 1
            rec = {"provider": "?"}
            try:
                rec = json.loads(line)
                if rec["provider"] == "gemini":
                    check_gemini(rec["frame"])
                elif rec["provider"] == "openai":
                    check_openai(rec["frame"], classes)
                elif rec["provider"] == "openai-chat":
                    check_openai_chat(rec["frame"], adapters)
                elif rec["provider"] == "anthropic":
                    check_openai_chat(rec["frame"], claude)
                elif rec["provider"] == "gemini-text":
                    check_gemini_text(rec["frame"])
                else:
                    raise ValueError(f"unknown provider {rec['provider']!r}")
            except Exception as e:  # every failure is reported, then the exit code says so
                bad += 1
                print(f"{path}:{line_no}: {rec.get('provider')} frame invalid: {e}".replace("\n", " "))
    print(f"{n} frames, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
