// A writer for a record type of your own: an encoder (serialize() with JsonLine, malformed
// records) given to the engine.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct Completion {
    std::string request_id;
    int model = 0;                 // an index into the encoder's model table
    double latency_ms = 0;         // must be finite
    std::optional<double> ttft_ms; // unknown: written as null
    std::vector<std::int32_t> token_ids;
};

class CompletionEncoder final : public jsonlw::RecordEncoder<Completion> {
public:
    explicit CompletionEncoder(std::map<int, std::string> models) : models_(std::move(models)) {}

    void serialize(const Completion& c, jsonlw::JsonLine& line) override
    {
        if (c.request_id.empty()) throw jsonlw::MalformedRecord("request_id is empty");
        line.begin_object()
            .field("request_id", c.request_id)    // escaped; bad UTF-8 becomes U+FFFD
            .field("model", models_.at(c.model))  // std::out_of_range: see malformed_error()
            .field("latency_ms", c.latency_ms);   // NaN or inf: MalformedRecord
        line.key("ttft_ms").number_or_null(
            c.ttft_ms.value_or(std::numeric_limits<double>::quiet_NaN()));
        line.key("token_ids").begin_array();
        for (std::int32_t id : c.token_ids) line.value(id);
        line.end_array().end_object();
    }

    // An unknown model index means "this record cannot be represented", not a bug.
    bool malformed_error(const std::exception& e) const noexcept override
    {
        return dynamic_cast<const std::out_of_range*>(&e) != nullptr;
    }

    // Lets batch_bytes cap a batch; an estimate is enough.
    std::size_t record_bytes(const Completion& c) const noexcept override
    {
        return 96 + c.request_id.size() + 8 * c.token_ids.size();
    }

private:
    const std::map<int, std::string> models_;  // lives as long as the engine needs it
};

int main()
{
    boost::asio::io_context io;
    jsonlw::JsonlRecordWriter<Completion> writer(
        io.get_executor(),
        {.directory = "jsonlw-out/extending", .stem = "completions", .subject = "completion"},
        std::make_shared<CompletionEncoder>(
            std::map<int, std::string>{{0, "llama-3.1-8b"}, {1, "mistral-7b"}}));
    writer.start();
    writer.submit({"req-1", 0, 41.5, 12.25, {1, 15043, 29892}});  // written
    writer.submit({"req-2", 1, 38.0, std::nullopt, {1, 22172}});   // written, "ttft_ms":null
    writer.submit({"", 0, 10.0, 1.0, {}});                          // malformed: empty id
    writer.submit({"req-4", 7, 10.0, 1.0, {}});                     // malformed: no model 7
    writer.submit({"req-5", 0, std::numeric_limits<double>::infinity(), 1.0, {}});  // malformed
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("written {}, malformed {}\n", r.stats.written, r.stats.dropped.malformed);
    });
    io.run();
}
