// A layout a key cannot express, by overriding the encoder's write_batch(): each tenant's
// events go to a file of the tenant's own, configured anywhere on disk (not under the writer's
// directory), and an unknown tenant's to a shared file.
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct Event {
    std::string tenant;
    std::string text;
};

class TenantFilesEncoder final : public jsonlw::RecordEncoder<Event> {
public:
    TenantFilesEncoder(std::map<std::string, std::filesystem::path, std::less<>> files,
                       std::filesystem::path others)
        : files_(std::move(files)), others_(std::move(others))
    {
    }

    void serialize(const Event& e, jsonlw::JsonLine& line) override
    {
        line.begin_object().field("tenant", e.tenant).field("text", e.text).end_object();
    }

    // Groups the batch by file (submission order kept within each group), then one
    // serialize_batch() and one append() per file: serialize_batch() does the malformed
    // accounting, append() counts the lines written (or write_error / unknown on failure).
    void write_batch(std::span<const Event> batch, jsonlw::BatchOutput<Event>& out) override
    {
        std::map<const std::filesystem::path*, std::vector<const Event*>> groups;
        for (const Event& e : batch) {
            const auto it = files_.find(std::string_view(e.tenant));
            groups[it == files_.end() ? &others_ : &it->second].push_back(&e);
        }
        for (const auto& [file, group] : groups) {
            const jsonlw::Lines lines = out.serialize_batch(group);  // valid until the next call
            if (lines.records > 0) out.append(*file, lines);
        }
    }

private:
    const std::map<std::string, std::filesystem::path, std::less<>> files_;
    const std::filesystem::path others_;
};

int main()
{
    boost::asio::io_context io;
    jsonlw::JsonlRecordWriter<Event> writer(
        io.get_executor(), {.directory = "jsonlw-out/tenant-files", .subject = "tenant event"},
        std::make_shared<TenantFilesEncoder>(
            std::map<std::string, std::filesystem::path, std::less<>>{
                {"acme", "jsonlw-out/acme-data/events.jsonl"},
                {"globex", "jsonlw-out/globex-data/events.jsonl"}},
            "jsonlw-out/tenant-files/others.jsonl"));
    writer.start();
    writer.submit({"acme", "login"});
    writer.submit({"globex", "login"});
    writer.submit({"initech", "login"});  // no file of its own: others.jsonl
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("written {}, malformed {}, batches {}\n", r.stats.written,
                   r.stats.dropped.malformed, r.stats.batches);
    });
    io.run();
}
