// The keys one kind of Python dict (or instance dict) is read for, so that a reader walks the
// dict once (PyDict_Next) and files each item under its field, instead of one lookup per
// field: the records' dicts hold few of their optional keys, and the walk also sees every key
// (the non-str check needs that anyway). GIL held for everything here.
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <new>

namespace jsonlw::python {

template <std::size_t N>
class DictShape {
public:
    // `names`: string literals (kept by pointer). Throws std::bad_alloc.
    explicit DictShape(const std::array<const char*, N>& names) : names_(names)
    {
        for (std::size_t i = 0; i < N; ++i) {
            PyObject* k = PyUnicode_InternFromString(names[i]);  // kept for the process
            if (!k) {
                PyErr_Clear();
                throw std::bad_alloc();
            }
            keys_[i] = k;
            const Py_hash_t h = PyObject_Hash(k);
            std::size_t j = std::size_t(h) & mask;
            while (table_[j].key) j = (j + 1) & mask;
            table_[j] = Slot{k, h, int(i)};
        }
    }

    // The field `key` (an exact str) names, or -1. An interned key (a literal in Python
    // source, an attribute name) is found by identity; an equal str made otherwise (a dict
    // from json.loads) by its cached hash and one comparison.
    int find(PyObject* key) const noexcept
    {
        // A dict's key has its hash cached in the str: read it, without a call.
        Py_hash_t h = reinterpret_cast<PyASCIIObject*>(key)->hash;
        if (h == -1) h = PyObject_Hash(key);
        for (std::size_t j = std::size_t(h) & mask;; j = (j + 1) & mask) {
            const Slot& s = table_[j];
            if (!s.key) return -1;
            if (s.key == key) return s.field;
            if (s.hash == h && PyUnicode_Compare(key, s.key) == 0) return s.field;
        }
    }

    PyObject* key(int field) const noexcept { return keys_[std::size_t(field)]; }
    const char* name(int field) const noexcept { return names_[std::size_t(field)]; }

private:
    static constexpr std::size_t slots = 64;  // open addressing, at most a third full
    static constexpr std::size_t mask = slots - 1;
    static_assert(N * 3 <= slots);
    struct Slot {
        PyObject* key = nullptr;
        Py_hash_t hash = 0;
        int field = -1;
    };
    std::array<const char*, N> names_;
    std::array<PyObject*, N> keys_{};
    std::array<Slot, slots> table_{};
};

}  // namespace jsonlw::python
