// A post-processor hook chunk (PostProcessorHookChunk, any object with its attributes, or a
// dict of its fields) read into an OutputChunk on the caller's thread, GIL held. Strings are
// borrowed from the Python objects, which ReadChunk keeps alive for the hook call.
#pragma once

#include "common.hpp"

#include <jsonlw/raw_output_record.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace jsonlw::python {

struct ReadChunk {
    OutputChunk chunk;
    std::string text_diff_store, text_store;  // only for text with lone surrogates
    // token_ids_diff: a chunk's few ids stay inline (no allocation per chunk).
    std::array<std::int32_t, 32> ids_inline;
    std::vector<std::int32_t> ids_heap;
    py::object keep_text_diff, keep_text;  // the borrowed strings' owners
};

// Reads `obj` into `r`. Throws BadRecord for a chunk that cannot be read (its text is what
// the hook logs); std::bad_alloc when out of memory.
void read_chunk(PyObject* obj, ReadChunk& r);

// chunk.text_diff (chunk["text_diff"] for a dict) for the verdict, as it is (None too); ""
// when it is absent or reading it raises. Never raises; nullptr only when out of memory.
PyObject* verdict_text(PyObject* obj) noexcept;

}  // namespace jsonlw::python
