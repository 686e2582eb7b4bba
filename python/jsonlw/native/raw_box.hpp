// What a Python RawOutputDump holds: the C++ RawOutputWriter's box plus the count of chunks
// that could not be read. Shared with the snapshot binding, which feeds the same writer.
#pragma once

#include "writer_box.hpp"

#include <jsonlw/raw_output_writer.hpp>

#include <atomic>
#include <cstdint>

namespace jsonlw::python {

class RawBox : public WriterBox<RawOutputWriter> {
public:
    using WriterBox::WriterBox;
    std::atomic<std::uint64_t> bad_chunks{0};
};

}  // namespace jsonlw::python
