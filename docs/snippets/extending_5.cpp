// A per-key layout by key: records go to <directory>/<tenant>/part.jsonl instead of one file.
// The encoder names each record's key; the engine groups the batch by key and a
// PartitionedFileSink keeps one file per key.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>

struct Event {
    std::string tenant;  // becomes a folder name through safe_path_component()
    std::string text;
};

class TenantEncoder final : public jsonlw::RecordEncoder<Event> {
public:
    void serialize(const Event& e, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("tenant", e.tenant).field("text", e.text).end_object();
    }
    // The tenant comes from record data: safe_path_component() makes it one folder name that
    // cannot leave the directory ("../etc" becomes "%2E.%2Fetc").
    void key(const Event& e, std::string& key) override
    {
        key += jsonlw::safe_path_component(e.tenant);
        key += "/part.jsonl";
    }
};

int main()
{
    boost::asio::io_context io;
    jsonlw::JsonlRecordWriter<Event> writer(
        io.get_executor(),
        {.directory = "jsonlw-out/per-tenant",
         .subject = "tenant event",
         .sink = std::make_shared<jsonlw::PartitionedFileSink>()},
        std::make_shared<TenantEncoder>());
    writer.start();
    writer.submit({"acme", "login"});
    writer.submit({"acme", "upload"});
    writer.submit({"globex", "login"});
    writer.submit({"acme", "logout"});
    writer.submit({"../etc", "escape attempt"});  // stays inside: per-tenant/%2E.%2Fetc/
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("written {}, malformed {}, batches {}\n", r.stats.written,
                   r.stats.dropped.malformed, r.stats.batches);
    });
    io.run();
}
