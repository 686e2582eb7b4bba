"""Read-only attributes that a Python object takes from the C++ object it wraps."""

import operator


def forwarded(path, doc=None):
    """A read-only property whose value is the attribute at `path` of the instance, read on
    each access ("_native.recording": self._native.recording)."""
    return property(operator.attrgetter(path), doc=doc)
