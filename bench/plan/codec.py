"""Dataclasses to JSON and back, by their field annotations: one codec for
every record mmlat writes (a run's records, plan/model.py; the analysis's
summary.json and the README's summaries), so that no reader rebuilds a
record from loose dicts.

to_json(record) gives plain lists, dicts and scalars; from_json(type,
data) builds the record again, checking each field against its
annotation: a dataclass, list[T], tuple[T, ...], dict[str, T], T | None,
a generic dataclass's parameter (Sides[Distribution]), or a scalar.  A
field the data lacks takes its default; a key the type does not know is
an error, so that a record written by another version of the code is
refused, not misread."""
import dataclasses
import types
import typing

NONE_TYPE = type(None)


class RecordError(ValueError):
    """Data that does not fit the record's type; the message names the
    path to the bad value (Summary.workloads[2].latency.baseline)."""


def to_json(value):
    """A record (dataclass) and everything in it as JSON's types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(tp, data, where=None):
    """data (from json.load) as a value of type tp."""
    return _decode(tp, data, where or getattr(tp, "__name__", str(tp)), {})


def _fail(where, why):
    raise RecordError("%s: %s" % (where, why))


def _decode(tp, data, where, bound):
    if isinstance(tp, typing.TypeVar):
        return _decode(bound[tp], data, where, bound) if tp in bound else data
    if tp in (typing.Any, object):
        return data
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            if NONE_TYPE not in args:
                _fail(where, "null where a value is needed")
            return None
        kinds = [a for a in args if a is not NONE_TYPE]
        if len(kinds) == 1:
            return _decode(kinds[0], data, where, bound)
        # several scalar types (int | str): the one the value has
        for kind in kinds:
            if kind in (int, float, str, bool) and isinstance(data, kind):
                return data
        names = [getattr(k, "__name__", str(k)) for k in kinds]
        _fail(where, "%r is none of %s" % (data, ", ".join(names)))
    if origin is list or tp is list:
        if not isinstance(data, list):
            _fail(where, "a list expected, not %s" % type(data).__name__)
        item = args[0] if args else typing.Any
        return [_decode(item, v, "%s[%d]" % (where, i), bound) for i, v in enumerate(data)]
    if origin is tuple or tp is tuple:
        if not isinstance(data, list):
            _fail(where, "a list expected, not %s" % type(data).__name__)
        if not args:
            return tuple(data)
        items = ([args[0]] * len(data) if len(args) == 2 and args[1] is Ellipsis
                 else list(args))
        if len(items) != len(data):
            _fail(where, "%d items expected, %d found" % (len(items), len(data)))
        return tuple(_decode(t, v, "%s[%d]" % (where, i), bound)
                     for i, (t, v) in enumerate(zip(items, data)))
    if origin is dict or tp is dict:
        if not isinstance(data, dict):
            _fail(where, "an object expected, not %s" % type(data).__name__)
        value = args[1] if args else typing.Any
        return {k: _decode(value, v, "%s[%r]" % (where, k), bound) for k, v in data.items()}
    record = origin if dataclasses.is_dataclass(origin) else tp
    if dataclasses.is_dataclass(record):
        params = getattr(record, "__parameters__", ())
        inner = {**bound, **dict(zip(params, args))} if args else bound
        return _record(record, data, where, inner)
    if tp is float:
        # an int is a float's value too (written as 10, read back as 10)
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            _fail(where, "a number expected, not %r" % (data,))
        return data
    if tp in (int, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            _fail(where, "%s expected, not %r" % (tp.__name__, data))
        return data
    _fail(where, "no reader for the type %r" % (tp,))


def _record(cls, data, where, bound):
    if not isinstance(data, dict):
        _fail(where, "an object expected for %s, not %s" % (cls.__name__, type(data).__name__))
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        _fail(where, "%s has no field %s" % (cls.__name__, ", ".join(unknown)))
    kwargs = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in data:
            kwargs[f.name] = _decode(hints[f.name], data[f.name], "%s.%s" % (where, f.name),
                                     bound)
        elif (f.default is dataclasses.MISSING
              and f.default_factory is dataclasses.MISSING):
            _fail(where, "%s needs the field %s" % (cls.__name__, f.name))
    return cls(**kwargs)
