#include <jsonlw/report/report.hpp>

#include <simdjson.h>

#include <chrono>

namespace jsonlw::tools {

BaselineResult iterate_many_baseline(const std::vector<std::filesystem::path>& files)
{
    BaselineResult r;
    const auto started = std::chrono::steady_clock::now();
    simdjson::ondemand::parser parser;
    for (const auto& path : files) {
        simdjson::padded_string text;
        if (const auto err = simdjson::padded_string::load(path.string()).get(text)) {
            if (r.error.empty()) r.error = path.string() + ": " + simdjson::error_message(err);
            continue;
        }
        r.bytes += text.size();
        simdjson::ondemand::document_stream stream;
        // A batch must hold the longest line (simdjson 3.0.1 refuses a longer one: "This parser
        // can't support a document that big"); 16 MB keeps big raw-output lines in.
        if (const auto err = parser.iterate_many(text, std::size_t{16} << 20).get(stream)) {
            if (r.error.empty()) r.error = path.string() + ": " + simdjson::error_message(err);
            continue;
        }
        for (auto it = stream.begin(); it != stream.end(); ++it) {
            if (it.error()) {
                if (r.error.empty()) r.error = path.string() + ": " + simdjson::error_message(it.error());
                break;
            }
            ++r.documents;
        }
        r.truncated_bytes += stream.truncated_bytes();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return r;
}

}  // namespace jsonlw::tools
