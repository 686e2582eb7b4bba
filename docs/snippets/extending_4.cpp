// A writer made of the engine and an encoder object: the engine owns the encoder, so the
// encoder's state (a model table here) lives as long as the I/O thread needs it.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>

struct Completion {
    std::string request_id;
    int model = 0;  // an index into the encoder's model table
    double latency_ms = 0;
};

class CompletionEncoder final : public jsonlw::RecordEncoder<Completion> {
public:
    explicit CompletionEncoder(std::map<int, std::string> models) : models_(std::move(models)) {}

    void serialize(const Completion& c, jsonlw::JsonLine& line) override
    {
        const auto model = models_.find(c.model);
        if (model == models_.end()) throw jsonlw::MalformedRecord("unknown model");
        line.begin_object()
            .field("request_id", c.request_id)
            .field("model", model->second)
            .field("latency_ms", c.latency_ms)
            .end_object();
    }
    // serialize() reads its record and the constant table only.
    bool concurrent_serialize() const noexcept override { return true; }

private:
    const std::map<int, std::string> models_;
};

int main()
{
    boost::asio::io_context io;
    jsonlw::JsonlRecordWriter<Completion> writer(
        io.get_executor(), {.directory = "jsonlw-out/encoded", .subject = "completion"},
        std::make_shared<CompletionEncoder>(std::map<int, std::string>{{0, "llama-3-8b"}}));
    writer.start();
    writer.submit({"req-1", 0, 41.5});
    writer.submit({"req-2", 7, 12.0});  // unknown model: dropped as malformed, counted
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("written {}, malformed {}\n", r.stats.written, r.stats.dropped.malformed);
    });
    io.run();
}
