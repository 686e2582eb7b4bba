// A per-key layout: records go to <directory>/<tenant>/part.jsonl instead of one file.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct Event {
    std::string tenant;  // becomes a folder name through safe_path_component()
    std::string text;
};

class PerTenantWriter final : public jsonlw::JsonlRecordWriter<Event> {
public:
    using JsonlRecordWriter::JsonlRecordWriter;
    ~PerTenantWriter() override { shutdown(); }

protected:
    void serialize(const Event& e, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("tenant", e.tenant).field("text", e.text).end_object();
    }

    // Groups the batch by tenant (submission order is kept within each group), then one
    // serialize_batch() and one append() per tenant. serialize_batch() does the malformed
    // accounting; append() counts the lines as written (or write_error / unknown on failure).
    // The tenant comes from record data: safe_path_component() makes it one folder name
    // that cannot leave the directory ("../etc" becomes "%2E.%2Fetc").
    void write_batch(std::span<const Event> batch) override
    {
        std::map<std::string_view, std::vector<const Event*>> groups;
        for (const Event& e : batch) groups[e.tenant].push_back(&e);
        for (const auto& [tenant, group] : groups) {
            const jsonlw::Lines lines = serialize_batch(group);  // valid until the next call
            if (lines.records > 0)
                append(options().directory / jsonlw::safe_path_component(tenant) / "part.jsonl",
                       lines);
        }
    }
};

int main()
{
    boost::asio::io_context io;
    PerTenantWriter writer(io.get_executor(), {.directory = "jsonlw-out/per-tenant",
                                               .subject = "tenant event"});
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
