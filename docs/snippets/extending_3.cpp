// Serializing on several threads: an encoder whose serialize() declares itself concurrent,
// with per-thread scratch indexed by serializer_slot().
#include <jsonlw/jsonlw.hpp>

#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

struct Query {
    long id = 0;
    std::string sql;
};

class QueryEncoder final : public jsonlw::RecordEncoder<Query> {
public:
    // One scratch string per serializer slot (WriterOptions::serializer_threads of them).
    explicit QueryEncoder(std::size_t serializer_threads)
        : scratch_(std::clamp<std::size_t>(serializer_threads, 1, 64))
    {
    }

    // serialize() touches its record and scratch_[serializer_slot()] only.
    bool concurrent_serialize() const noexcept override { return true; }

    void serialize(const Query& q, jsonlw::JsonLine& line) override
    {
        std::string& upper = scratch_[serializer_slot()];  // this thread's alone
        upper.assign(q.sql);
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        line.begin_object().field("id", q.id).field("sql", upper).end_object();
    }

private:
    std::vector<std::string> scratch_;
};

int main()
{
    boost::asio::io_context io;
    const jsonlw::WriterOptions opts{.directory = "jsonlw-out/queries",
                                     .subject = "query",
                                     .serializer_threads = 2};
    jsonlw::JsonlRecordWriter<Query> writer(io.get_executor(), opts,
                                            std::make_shared<QueryEncoder>(opts.serializer_threads));
    writer.start();
    for (long i = 0; i < 1000; ++i) writer.submit({i, "select * from t where id = " + std::to_string(i)});
    writer.async_close([](jsonlw::error_code, jsonlw::CloseReport r) {
        fmt::print("written {}, malformed {}\n", r.stats.written, r.stats.dropped.malformed);
    });
    io.run();
}
