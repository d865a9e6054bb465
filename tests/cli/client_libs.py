"""Instructor and LangChain against struxd, as their documentation uses them.

Run by tests/cli/test_client_libs.sh: python client_libs.py URL/v1 KEY.
Prints one TAP line per check ("ok N - ..." / "not ok N - ...") and the
plan.  Each client is built exactly as its docs show, with only base_url and
api_key set (and max_retries=0, so a refusal is not retried into a timeout).

Every parsed result is re-validated here with jsonschema against the
Pydantic model's own JSON Schema, both the raw text the server sent and the
object the client built from it: the client's parse alone could coerce or
default its way past a bad answer.

The schema-carrying modes (Instructor TOOLS / JSON_SCHEMA, LangChain
function_calling / json_schema) use a model with bounds the random weights
would not meet by chance, so a pass means the server enforced them.  The
JSON modes (Instructor JSON, LangChain json_mode) send only
response_format json_object plus the schema as prompt text: the server
guarantees a JSON object and nothing more (OpenAI's semantics), the shape
is the model's reading of the prompt, which a random model cannot do; so
they use a model whose fields are all optional, and the checks are that a
JSON object came back and both clients parsed it.
"""
import sys
import traceback

import instructor
from instructor.core import InstructorRetryException
import jsonschema
import openai
from langchain_openai import ChatOpenAI
from openai import OpenAI
from pydantic import BaseModel, Field

URL, KEY = sys.argv[1], sys.argv[2]
MSGS = [{"role": "user", "content": "Ada Lovelace is 36."}]
TEXT = "Ada Lovelace is 36."


class Person(BaseModel):
    name: str = Field(max_length=10)
    age: int = Field(ge=0, le=150)


class Loose(BaseModel):
    name: str | None = None
    age: int | None = None


def valid(model, obj):
    """obj (a dict, a JSON text, or an instance) validates against model's schema."""
    import json
    if isinstance(obj, BaseModel):
        assert isinstance(obj, model), (model, obj)
        obj = obj.model_dump(mode="json", exclude_unset=True)
    elif isinstance(obj, str):
        obj = json.loads(obj)
    jsonschema.validate(obj, model.model_json_schema())
    return obj


def oai():
    return OpenAI(base_url=URL, api_key=KEY, max_retries=0)


def instructor_mode(mode, model):
    client = instructor.from_openai(oai(), mode=mode)
    p, completion = client.chat.completions.create_with_completion(
        model="m", messages=MSGS, response_model=model, max_tokens=60, temperature=0,
        max_retries=0)
    valid(model, p)
    msg = completion.choices[0].message
    if mode == instructor.Mode.TOOLS:
        assert completion.choices[0].finish_reason == "tool_calls", completion
        assert msg.tool_calls[0].function.name == model.__name__, msg
        valid(model, msg.tool_calls[0].function.arguments)
    else:
        valid(model, msg.content)
        jsonschema.validate(valid(model, msg.content), {"type": "object"})


def langchain_method(method, model):
    llm = ChatOpenAI(base_url=URL, api_key=KEY, model="m", max_tokens=60, temperature=0,
                     max_retries=0)
    out = llm.with_structured_output(model, method=method, include_raw=True).invoke(TEXT)
    assert out["parsing_error"] is None, out
    valid(model, out["parsed"])
    raw = out["raw"]
    if method == "function_calling":
        # LangChain has already decoded the arguments into a dict
        valid(model, raw.tool_calls[0]["args"])
    else:
        jsonschema.validate(valid(model, raw.content), {"type": "object"})


def refused(fn, status, param):
    """fn raises the client's own HTTP error with the server's status and param."""
    try:
        fn()
    except openai.APIStatusError as e:
        err = e.body.get("error", e.body) if isinstance(e.body, dict) else {}
        assert e.status_code == status, (e.status_code, e.body)
        if param is not None:
            assert err.get("param") == param and param.lstrip("/") in str(e), (param, e.body)
        return
    except InstructorRetryException as e:
        # Instructor wraps what it caught; the server's error must be inside, unchanged
        cause = e.__cause__ or e.__context__
        assert isinstance(cause, openai.APIStatusError), repr(e)
        refused(lambda: (_ for _ in ()).throw(cause), status, param)
        return
    raise AssertionError("accepted")


def t_refusals():
    # an option the client passes straight through, which strux does not act on
    ic = instructor.from_openai(oai(), mode=instructor.Mode.TOOLS)
    refused(lambda: ic.chat.completions.create(
        model="m", messages=MSGS, response_model=Person, max_tokens=8, max_retries=0,
        reasoning_effort="low"), 400, "/reasoning_effort")
    llm = ChatOpenAI(base_url=URL, api_key=KEY, model="m", max_tokens=8, max_retries=0,
                     extra_body={"best_of": 2})
    refused(lambda: llm.with_structured_output(Person, method="json_schema").invoke(TEXT),
            400, "/best_of")
    # the Responses API (Instructor's RESPONSES_TOOLS, LangChain's use_responses_api) is
    # not served: a JSON 404, surfaced as the client's NotFoundError
    llm = ChatOpenAI(base_url=URL, api_key=KEY, model="m", max_tokens=8, max_retries=0,
                     use_responses_api=True)
    refused(lambda: llm.with_structured_output(Person, method="json_schema").invoke(TEXT),
            404, None)


TESTS = [
    ("Instructor Mode.TOOLS: a tool call whose arguments validate",
     lambda: instructor_mode(instructor.Mode.TOOLS, Person)),
    ("Instructor Mode.JSON_SCHEMA: content validates",
     lambda: instructor_mode(instructor.Mode.JSON_SCHEMA, Person)),
    ("Instructor Mode.JSON: a JSON object, parsed",
     lambda: instructor_mode(instructor.Mode.JSON, Loose)),
    ('LangChain with_structured_output(method="json_schema")',
     lambda: langchain_method("json_schema", Person)),
    ('LangChain with_structured_output(method="function_calling")',
     lambda: langchain_method("function_calling", Person)),
    ('LangChain with_structured_output(method="json_mode"): a JSON object, parsed',
     lambda: langchain_method("json_mode", Loose)),
    ("options strux does not act on fail loudly, as the client's own exception", t_refusals),
]
failed = 0
for i, (name, fn) in enumerate(TESTS, 1):
    try:
        fn()
        print(f"ok {i} - {name}", flush=True)
    except Exception:
        failed += 1
        print(f"not ok {i} - {name}")
        print("".join("# " + l + "\n" for l in traceback.format_exc().splitlines()), end="", flush=True)
print(f"1..{len(TESTS)}")
sys.exit(1 if failed else 0)
