// ConformanceWriter (see conformance_writer.hpp).
#include "conformance_writer.hpp"

namespace jsonlw::testing::conformance {

ConformanceWriter::ConformanceWriter(boost::asio::any_io_executor ex, WriterOptions o,
                                     std::string key)
    : JsonlRecordWriter(std::move(ex), std::move(o)), key_(std::move(key))
{
}

ConformanceWriter::~ConformanceWriter() { shutdown(); }

void ConformanceWriter::serialize(const std::uint64_t& id, JsonLine& line)
{
    line.begin_object().field("conformance", id).end_object();
}

void ConformanceWriter::write_batch(std::span<const std::uint64_t> batch)
{
    write_lines(key_, serialize_batch(batch));
}

}  // namespace jsonlw::testing::conformance
