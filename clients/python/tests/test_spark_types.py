"""strux_client.spark's JSON Schema -> Spark type mapping and value conversion (no Spark session:
the Spark job itself is tests/cli/test_spark.sh)."""
import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from strux_client.spark import _column, spark_type  # noqa: E402


def simple(schema):
    return spark_type(schema).simpleString()


def test_scalars_objects_arrays_maps():
    s = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": ["number", "null"]},
        "d": {"type": "boolean"}, "e": {"type": "array", "items": {"type": "integer"}},
        "f": {"type": "object", "additionalProperties": {"type": "number"}},
        "g": {"enum": ["x", "y"]}, "h": {"const": 3}, "i": {"enum": [1, 2.5]}}}
    assert simple(s) == ("struct<a:string,b:bigint,c:double,d:boolean,e:array<bigint>,"
                         "f:map<string,double>,g:string,h:bigint,i:double>")


def test_what_a_struct_cannot_hold_is_json_text():
    assert simple({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}) == \
        "string"
    assert simple({"anyOf": [{"type": "string"}, {"type": "integer"}]}) == "string"
    assert simple({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "bigint"
    tree = {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node"}
    assert simple(tree) == "struct<v:bigint,kids:array<string>>"
    assert simple({}) == "string" and simple(True) == "string"


def test_convert_and_arrow():
    s = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {},
                                          "m": {"additionalProperties": {"type": "string"},
                                                "type": "object"}}}
    col = _column(s)
    v = col.convert({"n": 2, "x": {"k": [1, "é"]}, "m": {"a": "b"}, "extra": 1}, "/output")
    assert v == {"n": 2, "x": '{"k":[1,"é"]}', "m": [("a", "b")]}
    arr = pa.array([v, None], type=col.arrow())
    assert arr.to_pylist()[0]["x"] == '{"k":[1,"é"]}'
    with pytest.raises(Exception) as e:
        col.convert({"n": 2 ** 70}, "/output")
    assert e.value.pointer == "/output/n"
    assert col.convert({"n": 3.0}, "/output")["n"] == 3
