// ConformanceWriter: the writer of every check_sink() writer run, made and closed by
// Checker::run_writer(); submit() from the loop's thread, serialize() and write_batch() as
// JsonlRecordWriter calls them. Record i is the line {"conformance":i}; every group goes under
// the one key it owns.
#pragma once

#include <jsonlw/jsonl_record_writer.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace jsonlw::testing::conformance {

class ConformanceWriter final : public JsonlRecordWriter<std::uint64_t> {
public:
    ConformanceWriter(boost::asio::any_io_executor ex, WriterOptions o, std::string key);
    ~ConformanceWriter() override;

protected:
    void serialize(const std::uint64_t& id, JsonLine& line) override;
    void write_batch(std::span<const std::uint64_t> batch) override;

private:
    const std::string key_;
};

}  // namespace jsonlw::testing::conformance
